import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { LRUCache } from 'lru-cache'
import type { Clock } from '../clock.js'
import { Problem } from '../errors.js'
import type { Principal, Provider, ProviderRepository } from './repository.js'
import { hashToken, isWellFormedToken } from './tokens.js'

/**
 * How long a valid token is believed without asking the database. The API lets a revoked token work for up to 5 s; no
 * instance's entry outlives this, so revocation reaches every instance in time without any message between them.
 */
const TOKEN_CACHE_TTL_MS = 2000
const TOKEN_CACHE_ENTRIES = 10_000

type PrincipalKind = Principal['kind']

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by `authenticate` on every /api/v1 request that gets past it: who the token belongs to. */
    principal: Principal | null
    /** The principal when it is a provider, else null. */
    provider: Provider | null
  }
  interface FastifyContextConfig {
    /** Which kind of client a route under /api/v1 serves: provider unless it says otherwise; `any` serves both. */
    principal?: PrincipalKind | 'any'
  }
}

export function unauthorized(detail: string, invalidToken: boolean): Problem {
  // RFC 6750 §3: a missing credential gets the bare challenge; a bad one says invalid_token.
  const challenge = invalidToken ? 'Bearer realm="listing-service", error="invalid_token"' : 'Bearer realm="listing-service"'
  return new Problem('unauthorized', detail, { headers: { 'www-authenticate': challenge } })
}

/** A token is 47 characters, so a longer Authorization value is malformed without being looked at. */
const MAX_AUTHORIZATION_LENGTH = 128

/** Scheme case-insensitive (RFC 6750 §2.1), spaces around the token tolerated; its content is isWellFormedToken's to judge. */
function bearerToken(header: string): string | undefined {
  if (header.length > MAX_AUTHORIZATION_LENGTH || header.slice(0, 7).toLowerCase() !== 'bearer ') return undefined
  const token = header.slice(7).trim()
  return token === '' ? undefined : token
}

const forbidden = (wanted: PrincipalKind, got: PrincipalKind) => new Problem('forbidden', `this route is for ${wanted}s; the token is a ${got}’s`)

/**
 * onRequest, before the body is read, so an unauthenticated request costs no parsing, validation or image fetching.
 * A token of the other kind than the route's config.principal is 403 (a route for `any` serves both), also before
 * any other work; a path no route serves stays 404 for either kind.
 */
export function authenticate(providers: ProviderRepository, clock: Clock): onRequestAsyncHookHandler {
  // Valid tokens only, keyed by hash: a token issued a moment ago works at once, and unknown tokens cannot fill the cache.
  // Dated by the injected clock, read afresh each time (ttlResolution 0: no timer per read).
  const valid = new LRUCache<string, Principal>({ max: TOKEN_CACHE_ENTRIES, ttl: TOKEN_CACHE_TTL_MS, ttlResolution: 0, perf: { now: clock } })
  async function principalOfBearer(request: FastifyRequest): Promise<Principal> {
    const header = request.headers.authorization
    if (header === undefined || header === '') {
      throw unauthorized('an Authorization: Bearer <token> header is required', false)
    }
    const token = bearerToken(header)
    if (token === undefined || !isWellFormedToken(token)) {
      throw unauthorized('the Authorization header must be "Bearer lst_…"', true)
    }
    const hash = hashToken(token)
    let principal = valid.get(hash)
    if (!principal) {
      principal = await providers.findPrincipalByTokenHash(hash)
      if (!principal) throw unauthorized('the token is unknown or has been revoked', true)
      valid.set(hash, principal)
    }
    return principal
  }
  return async (request) => {
    // The console's session cookie may have authenticated the request already.
    const principal = request.principal ?? (await principalOfBearer(request))
    request.principal = principal
    request.provider = principal.kind === 'provider' ? principal.provider : null
    const wanted = request.routeOptions.config.principal ?? 'provider'
    if (!request.is404 && wanted !== 'any' && principal.kind !== wanted) throw forbidden(wanted, principal.kind)
  }
}

/** The authenticated provider of a request under /api/v1; its absence is a wiring bug, not a client error. */
export function providerOf(request: FastifyRequest): Provider {
  if (!request.provider) throw new Error('route is not behind authenticate() or not a provider route')
  return request.provider
}

/** Whoever a request under /api/v1 is authenticated as. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('route is not behind authenticate()')
  return request.principal
}

/** The id of whoever a request under /api/v1 is authenticated as: what rate limits and logs are keyed by. */
export function principalIdOf(request: FastifyRequest): string {
  const principal = principalOf(request)
  return principal.kind === 'provider' ? principal.provider.id : principal.marketplace.id
}
