import type { FastifyInstance } from 'fastify'
import { invalidRequest, Problem } from '../errors.js'

// Keeps a byte-order mark as U+FEFF, which JSON.parse then refuses: RFC 8259 §8.1 forbids sending one.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The one body parser: JSON in UTF-8, decoded strictly; every other Content-Type is 415 (contract §5). */
export function registerJsonBody(app: FastifyInstance): void {
  // JSON is the only body type; anything else is 415. JSON.parse keeps "__proto__" as an ordinary own key,
  // which validation then rejects as an unknown field, so it can never reach an object's prototype.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    // JSON is UTF-8 (RFC 8259 §8.1); a body declared in another charset would be misread, so it is refused.
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1]
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      done(new Problem('unsupported-media-type', 'Content-Type must be application/json in UTF-8'), undefined)
      return
    }
    // Decoded strictly: a lenient decoder would turn bytes that are not UTF-8 into U+FFFD and store that instead
    // of what was sent.
    let text: string
    try {
      text = strictUtf8.decode(body as Buffer)
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
