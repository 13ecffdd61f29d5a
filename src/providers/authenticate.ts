import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { Problem } from '../errors.js'
import type { Provider, ProviderRepository } from './repository.js'
import { isWellFormedToken } from './tokens.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `authenticate` on every /api/v1 request that gets past it. */
    provider: Provider | null
  }
}

function unauthorized(detail: string, invalidToken: boolean): Problem {
  // RFC 6750 §3: a missing credential gets the bare challenge; a bad one says invalid_token.
  const challenge = invalidToken ? 'Bearer realm="listing-service", error="invalid_token"' : 'Bearer realm="listing-service"'
  return new Problem('unauthorized', detail, { headers: { 'www-authenticate': challenge } })
}

/**
 * onRequest hook: runs before the body is read, so an unauthenticated request costs no parsing, validation
 * or image fetching (contract §3: authentication happens before any other work).
 */
export function authenticate(providers: ProviderRepository): onRequestAsyncHookHandler {
  return async (request) => {
    const header = request.headers.authorization
    if (header === undefined || header === '') {
      throw unauthorized('an Authorization: Bearer <token> header is required', false)
    }
    const token = /^Bearer +(\S+) *$/i.exec(header)?.[1]
    if (token === undefined || !isWellFormedToken(token)) {
      throw unauthorized('the Authorization header must be "Bearer lst_…"', true)
    }
    const provider = await providers.findByToken(token)
    if (!provider) throw unauthorized('the token is unknown or has been revoked', true)
    request.provider = provider
  }
}

/** The authenticated provider of a request under /api/v1; its absence is a wiring bug, not a client error. */
export function providerOf(request: FastifyRequest): Provider {
  if (!request.provider) throw new Error('route is not behind authenticate()')
  return request.provider
}
