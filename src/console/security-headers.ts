import type { FastifyReply, FastifyRequest } from 'fastify'
import helmet from 'helmet'

/**
 * Every console response carries it: scripts and styles only from this origin (no inline code, no eval), nothing
 * framed by another site, forms and requests only to this origin. Images may come from https (brand images).
 */
const DIRECTIVES = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'https:', 'data:'],
  'connect-src': ["'self'"],
  'frame-ancestors': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'self'"],
  'object-src': ["'none'"],
}

/** The header's value, as helmet writes it. */
export const CONTENT_SECURITY_POLICY = Object.entries(DIRECTIVES)
  .map(([name, values]) => `${name} ${values.join(' ')}`)
  .join(';')

/**
 * helmet's headers with our policy in place of its default one, and no HSTS: helmet would send it over plain http
 * too, and with includeSubDomains, whose hosts are not the service's to decide for.
 */
const helmetHeaders = helmet({
  contentSecurityPolicy: { useDefaults: false, directives: DIRECTIVES },
  strictTransportSecurity: false,
  xFrameOptions: { action: 'deny' },
})

const STRICT_TRANSPORT_SECURITY = 'max-age=31536000'

/**
 * The console's security headers on an answer, whatever produced it: a route, a refusal by an earlier hook, or
 * the framework's answer to a path it cannot decode. HSTS only when the browser used HTTPS.
 */
export function setSecurityHeaders(request: FastifyRequest, reply: FastifyReply, overHttps: boolean): void {
  helmetHeaders(request.raw, reply.raw, () => undefined)
  if (overHttps) reply.header('strict-transport-security', STRICT_TRANSPORT_SECURITY)
}
