import type { FastifyRequest, onRequestHookHandler } from 'fastify'
import { invalidRequest, type Problem } from '../errors.js'

/**
 * RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without a Host header, with more than one Host
 * header line, or with a Host that is not a host. Node keeps only the first of two Host lines in
 * `request.headers` (and would answer a missing one with a bare 400 of its own, turned off in app.ts), so the
 * lines are counted in the raw headers and the answer is the contract's problem+json.
 */

/** A DNS name is at most 253 characters; with brackets for an IPv6 literal and a port there is room to spare. */
export const MAX_HOST_LENGTH = 300

// uri-host [ ":" port ] (RFC 3986 §3.2.2): an IP literal in brackets, or a reg-name (which covers IPv4
// addresses). The two forms start differently and neither admits ":", so the expression cannot backtrack.
const HOST = /^(?:\[[0-9A-Za-z:.]+\]|[A-Za-z0-9._~%!$&'()*+,;=-]*)(?::[0-9]*)?$/

const hostProblem = (detail: string): Problem => invalidRequest([{ header: 'Host', detail }])

function hostLines(request: FastifyRequest): string[] {
  const raw = request.raw.rawHeaders
  const values: string[] = []
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).length === 4 && (raw[i] as string).toLowerCase() === 'host') values.push(raw[i + 1] as string)
  }
  return values
}

/** onRequest hook, first of all: the request's Host, before authentication or any other work. */
export const checkHost: onRequestHookHandler = (request, _reply, done) => {
  const lines = hostLines(request)
  done(hostError(request, lines))
}

function hostError(request: FastifyRequest, lines: string[]): Problem | undefined {
  if (lines.length > 1) return hostProblem('must be given once')
  const [host] = lines
  // HTTP/1.0 had no Host header.
  if (host === undefined) return request.raw.httpVersion === '1.0' ? undefined : hostProblem('is required')
  if (host.length > MAX_HOST_LENGTH) return hostProblem(`must be at most ${MAX_HOST_LENGTH} characters`)
  if (!HOST.test(host)) return hostProblem('must be a host name or address, with an optional port')
  return undefined
}
