import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import type { Clock } from '../clock.js'
import { Problem } from '../errors.js'
import { TtlCache } from '../ttl-cache.js'
import type { Provider, ProviderRepository } from './repository.js'
import { hashToken, isWellFormedToken } from './tokens.js'

/**
 * How long a token, once found valid, is believed without asking the database again. Contract §3 lets a
 * revoked token work for up to 5 s on every instance; 2 s leaves margin. Each instance keeps its own cache
 * and no entry outlives this, so revocation reaches every instance in time without any message between them.
 */
export const TOKEN_CACHE_TTL_MS = 2000
const TOKEN_CACHE_ENTRIES = 10_000

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
export function authenticate(providers: ProviderRepository, clock: Clock): onRequestAsyncHookHandler {
  // Valid tokens only, keyed by hash: a token issued a moment ago works at once, and unknown tokens cannot
  // fill the cache. A busy provider's requests then cost no database round trip for authentication.
  const valid = new TtlCache<Provider>(TOKEN_CACHE_ENTRIES, TOKEN_CACHE_TTL_MS)
  return async (request) => {
    const header = request.headers.authorization
    if (header === undefined || header === '') {
      throw unauthorized('an Authorization: Bearer <token> header is required', false)
    }
    const token = /^Bearer +(\S+) *$/i.exec(header)?.[1]
    if (token === undefined || !isWellFormedToken(token)) {
      throw unauthorized('the Authorization header must be "Bearer lst_…"', true)
    }
    const hash = hashToken(token)
    let provider = valid.get(hash, clock())
    if (!provider) {
      provider = await providers.findByTokenHash(hash)
      if (!provider) throw unauthorized('the token is unknown or has been revoked', true)
      valid.set(hash, provider, clock())
    }
    request.provider = provider
  }
}

/** The authenticated provider of a request under /api/v1; its absence is a wiring bug, not a client error. */
export function providerOf(request: FastifyRequest): Provider {
  if (!request.provider) throw new Error('route is not behind authenticate()')
  return request.provider
}
