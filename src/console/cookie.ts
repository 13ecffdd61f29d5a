import type { FastifyRequest } from 'fastify'

/** The session cookie's name. Not `__Host-`: that prefix needs `Secure`, and a service on plain http is allowed. */
export const SESSION_COOKIE = 'console_session'

/**
 * The header a browser's console requests carry next to the cookie. A cross-site form or "simple" request cannot
 * set a custom header; a cross-site fetch that sets one needs a CORS preflight, which this service never grants.
 * So a request bearing it came from a page of this origin (CSRF proof), on top of SameSite=Strict.
 */
export const CSRF_HEADER = 'x-console-session'

/** The session id the request's cookie carries, if any. */
export function sessionCookieOf(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie
  if (!header) return undefined
  for (const part of header.split(';')) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === SESSION_COOKIE) return part.slice(at + 1).trim()
  }
  return undefined
}

/** True when the request carries the anti-CSRF header, as the console sends it (`X-Console-Session: 1`). */
export function hasCsrfProof(request: FastifyRequest): boolean {
  return request.headers[CSRF_HEADER] === '1'
}

/** Over HTTPS itself, or behind a proxy that says the browser used HTTPS. */
function cameOverHttps(request: FastifyRequest): boolean {
  const forwarded = request.headers['x-forwarded-proto']
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim().toLowerCase()
  return request.protocol === 'https' || first === 'https'
}

/** Set-Cookie for a new session: HttpOnly (no script reads it), SameSite=Strict, Secure over HTTPS. */
export function sessionCookie(request: FastifyRequest, sessionId: string): string {
  // No Max-Age: the server decides when a session ends (12 h idle), and the browser forgets it when it closes.
  return [`${SESSION_COOKIE}=${sessionId}`, 'Path=/', 'HttpOnly', 'SameSite=Strict', ...(cameOverHttps(request) ? ['Secure'] : [])].join('; ')
}

/** Set-Cookie that removes the session cookie. */
export function clearedCookie(request: FastifyRequest): string {
  return [`${SESSION_COOKIE}=`, 'Path=/', 'HttpOnly', 'SameSite=Strict', 'Max-Age=0', ...(cameOverHttps(request) ? ['Secure'] : [])].join('; ')
}
