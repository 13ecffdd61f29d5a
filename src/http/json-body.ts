import type { FastifyInstance, FastifyRequest } from 'fastify'
import { invalidRequest, Problem } from '../errors.js'
import { exceedsBounds, TOO_DEEP, TOO_MANY_VALUES } from './json-bounds.js'

// Keeps a byte-order mark, which JSON.parse then refuses: RFC 8259 forbids sending one.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** A longer Content-Type is refused (415) before Fastify parses its parameters. */
const MAX_CONTENT_TYPE_LENGTH = 256

const unsupported = (header: string, detail: string, summary: string) => new Problem('unsupported-media-type', summary, { errors: [{ header, detail }] })

/** Lower-cased and unquoted. Split by hand: no regular expression to keep linear. */
function charsetOf(contentType: string): string | undefined {
  const parameters = contentType.split(';').slice(1)
  for (const parameter of parameters) {
    const equals = parameter.indexOf('=')
    if (equals < 0 || parameter.slice(0, equals).trim().toLowerCase() !== 'charset') continue
    const value = parameter.slice(equals + 1).trim()
    return (value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value).toLowerCase()
  }
  return undefined
}

/** Whether a list of codings names none but `codings` (empty elements allowed, case-insensitive). */
function onlyCodings(value: string, ...codings: string[]): boolean {
  return value.split(',').every((element) => {
    const coding = element.trim().toLowerCase()
    return coding === '' || codings.includes(coding)
  })
}

/**
 * Refused (415) before the body is read: any content coding (decoding would let a body past the size limit, and
 * storing it undecoded would store compressed bytes), or a transfer coding but chunked.
 */
function refuseUnreadable(request: FastifyRequest): Problem | undefined {
  const { 'content-encoding': contentEncoding, 'transfer-encoding': transferEncoding, 'content-type': contentType } = request.headers
  if (contentEncoding !== undefined && !onlyCodings(contentEncoding, 'identity')) {
    return unsupported('Content-Encoding', 'must be identity: no content coding is decoded', 'the request body must not be compressed')
  }
  if (transferEncoding !== undefined && !onlyCodings(transferEncoding, 'chunked')) {
    return unsupported('Transfer-Encoding', 'must be chunked: no other transfer coding is decoded', 'the request body must not be compressed')
  }
  if (contentType !== undefined && contentType.length > MAX_CONTENT_TYPE_LENGTH) {
    return unsupported('Content-Type', `must be at most ${MAX_CONTENT_TYPE_LENGTH} characters`, 'Content-Type must be application/json in UTF-8')
  }
  return undefined
}

/** The one body parser: JSON in UTF-8, decoded strictly. */
export function registerJsonBody(app: FastifyInstance): void {
  app.addHook('preParsing', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return
    const problem = refuseUnreadable(request)
    if (problem) throw problem
  })
  // JSON.parse keeps "__proto__" as an own key, which validation rejects as unknown: it never reaches a prototype.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // JSON is UTF-8; a body declared in another charset would be misread.
    const charset = charsetOf(request.headers['content-type'] ?? '')
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      done(new Problem('unsupported-media-type', 'Content-Type must be application/json in UTF-8'), undefined)
      return
    }
    const bytes = body as Buffer
    const exceeded = exceedsBounds(bytes)
    if (exceeded) {
      done(invalidRequest([{ pointer: '', detail: exceeded === 'depth' ? TOO_DEEP : TOO_MANY_VALUES }]), undefined)
      return
    }
    // Strictly: a lenient decoder would store U+FFFD instead of what was sent.
    let text: string
    try {
      text = strictUtf8.decode(bytes)
    } catch {
      done(invalidRequest([{ pointer: '', detail: 'is not valid UTF-8' }]), undefined)
      return
    }
    try {
      done(null, JSON.parse(text))
    } catch (error) {
      done(invalidRequest([{ pointer: '', detail: `is not valid JSON: ${(error as Error).message}` }]), undefined)
    }
  })
}
