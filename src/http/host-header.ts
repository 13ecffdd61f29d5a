import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { invalidRequest, type Problem } from '../errors.js'

/*
 * RFC 9112: an HTTP/1.1 request without a Host, with two, or with one that is not a host, is 400. Node keeps only
 * the first of two in `request.headers`, so the raw lines are counted.
 */

/** A DNS name is at most 253 characters; this leaves room for IPv6 brackets and a port. */
const MAX_HOST_LENGTH = 300

// uri-host [ ":" port ]: a bracketed IP literal or a reg-name. The forms start differently and neither admits
// ":", so the expression cannot backtrack.
const HOST = /^(?:\[[0-9A-Za-z:.]+\]|[A-Za-z0-9._~%!$&'()*+,;=-]*)(?::[0-9]*)?$/

const hostProblem = (detail: string): Problem => invalidRequest([{ header: 'Host', detail }])

/** onRequest hook, before authentication or any other work. */
export const checkHost: onRequestHookHandler = (request, _reply, done) => {
  done(hostError(request))
}

function hostError(request: FastifyRequest): Problem | undefined {
  const raw = request.raw.rawHeaders
  const lines: string[] = []
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).length === 4 && (raw[i] as string).toLowerCase() === 'host') lines.push(raw[i + 1] as string)
  }
  if (lines.length > 1) return hostProblem('must be given once')
  const [host] = lines
  // HTTP/1.0 had no Host header.
  if (host === undefined) return request.raw.httpVersion === '1.0' ? undefined : hostProblem('is required')
  if (host.length > MAX_HOST_LENGTH) return hostProblem(`must be at most ${MAX_HOST_LENGTH} characters`)
  if (!HOST.test(host)) return hostProblem('must be a host name or address, with an optional port')
  return undefined
}
