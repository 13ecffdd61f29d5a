import type { TLSSocket } from 'node:tls'
import type { FastifyRequest } from 'fastify'
import type { Config } from '../config.js'

/**
 * Whether the browser used HTTPS, as the operator configured it: an https PUBLIC_BASE_URL, TLS on the socket, or,
 * only with TRUST_PROXY, the proxy's X-Forwarded-Proto (its last value, the one the nearest proxy wrote). Without
 * TRUST_PROXY the header is any client's to write, and is ignored.
 */
export function overHttpsRule(config: Pick<Config, 'PUBLIC_BASE_URL' | 'TRUST_PROXY'>): (request: FastifyRequest) => boolean {
  const httpsBaseUrl = config.PUBLIC_BASE_URL?.startsWith('https:') ?? false
  return (request) => {
    if (httpsBaseUrl || (request.raw.socket as Partial<TLSSocket>).encrypted === true) return true
    if (!config.TRUST_PROXY) return false
    const forwarded = request.headers['x-forwarded-proto']
    const value = Array.isArray(forwarded) ? forwarded.join(',') : (forwarded ?? '')
    return (
      value
        .slice(value.lastIndexOf(',') + 1)
        .trim()
        .toLowerCase() === 'https'
    )
  }
}
