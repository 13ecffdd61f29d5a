import { isIP } from 'node:net'
import { fastifyCookie } from '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'

/**
 * The header a browser's console requests carry next to the cookie. A cross-site form or "simple" request cannot
 * set a custom header; a cross-site fetch that sets one needs a CORS preflight, which this service never grants.
 * So a request bearing it came from a page of this origin (CSRF proof), on top of SameSite=Strict.
 */
export const CSRF_HEADER = 'x-console-session'

/**
 * The provider the page shows as signed in, sent with its API calls: a cookie replaced behind the page's back
 * (another tab's sign-in, a cookie set from another port of the host) then fails instead of acting for someone else.
 */
export const PROVIDER_HEADER = 'x-console-provider'

/** True when the request carries the anti-CSRF header, as the console sends it (`X-Console-Session: 1`). */
export function hasCsrfProof(request: FastifyRequest): boolean {
  return request.headers[CSRF_HEADER] === '1'
}

/** Over plain http. Browsers do not separate cookies by port, so a page on another port can set one of this name. */
const PLAIN_NAME = 'console_session'
/** Over HTTPS: a browser keeps it only when Secure, Path=/ and host-only, so no other path or subdomain can add one. */
const HOST_NAME = '__Host-console_session'

/** The characters a cookie's Path may hold (RFC 6265); other request paths are not cleared, never a thrown error. */
const COOKIE_PATH = /^[\u0020-\u003A\u003D-\u007E]+$/
/** A request path of more segments is cleared up to this many of them: enough for every console and API path. */
const MAX_CLEARED_PATHS = 12

/**
 * The prefixes of a request path that a cookie's Path could have been for the browser to send it here (RFC 6265
 * §5.1.4): `/`, then each segment with and without its trailing slash.
 */
export function cookiePathsFor(path: string): string[] {
  const paths = ['/']
  for (let at = 1; at <= path.length && paths.length < MAX_CLEARED_PATHS; at++) {
    if (at < path.length && path[at] !== '/') continue
    paths.push(path.slice(0, at))
    if (at < path.length) paths.push(path.slice(0, at + 1))
  }
  return [...new Set(paths)].filter((candidate) => COOKIE_PATH.test(candidate)).slice(0, MAX_CLEARED_PATHS)
}

/** The Domain values a cookie sent to `host` may carry: the host and each parent with two labels or more. */
export function cookieDomainsFor(host: string): string[] {
  if (isIP(host) !== 0 || !host.includes('.')) return []
  const labels = host.toLowerCase().split('.')
  return labels.slice(0, -1).map((_, at) => labels.slice(at).join('.'))
}

/** The session cookie: its name and flags by scheme, every value a request carries, and the Set-Cookie that ends them. */
export class SessionCookie {
  constructor(private readonly overHttps: (request: FastifyRequest) => boolean) {}

  nameFor(request: FastifyRequest): string {
    return this.overHttps(request) ? HOST_NAME : PLAIN_NAME
  }

  /**
   * Every value the Cookie header holds under the session cookie's name, read from the raw header: a parser
   * keeping one value per name would hide a second cookie set beside ours (another path, port or subdomain).
   */
  valuesIn(request: FastifyRequest): string[] {
    const header = request.headers.cookie
    if (!header) return []
    const name = this.nameFor(request)
    const values: string[] = []
    for (const part of header.split(';')) {
      const at = part.indexOf('=')
      if (at > 0 && part.slice(0, at).trim() === name) values.push(part.slice(at + 1).trim())
    }
    return values
  }

  /** A new session's cookie: HttpOnly (no script reads it), SameSite=Strict, Secure and `__Host-` over HTTPS. */
  set(request: FastifyRequest, reply: FastifyReply, sessionId: string): void {
    // No Max-Age: the server decides when a session ends, and the browser forgets it when it closes.
    reply.setCookie(this.nameFor(request), sessionId, this.#flags(request))
  }

  clear(request: FastifyRequest, reply: FastifyReply): void {
    reply.clearCookie(this.nameFor(request), this.#flags(request))
  }

  /**
   * Set-Cookie lines that remove every session cookie this request could have been sent: at each path it could
   * have been set for, host-only and for each domain above. Written with the cookie library's serializer, and
   * usable outside the console's routes (the API's cookie check), where its plugin is not registered.
   */
  clearingsFor(request: FastifyRequest): string[] {
    const name = this.nameFor(request)
    const secure = this.overHttps(request)
    const domains = [undefined, ...cookieDomainsFor(request.hostname)]
    return cookiePathsFor(request.url.split('?')[0] ?? '/').flatMap((path) =>
      domains.map((domain) => fastifyCookie.serialize(name, '', { path, domain, maxAge: 0, expires: new Date(0), secure })),
    )
  }

  #flags(request: FastifyRequest) {
    return { path: '/', httpOnly: true, sameSite: 'strict', secure: this.overHttps(request) } as const
  }
}
