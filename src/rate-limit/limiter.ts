import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import type { Clock } from '../clock.js'
import { Problem } from '../errors.js'
import { principalIdOf } from '../providers/authenticate.js'
import { MemoryStore } from './memory-store.js'
import { RedisStore } from './redis-store.js'
import type { RateLimitStore } from './store.js'

/** docs/api.md#rate-limits counts requests per minute: one fixed window of 60 s per provider. */
export const WINDOW_MS = 60_000

// The one policy, named in both headers so a client can match them (draft-ietf-httpapi-ratelimit-headers-11).
const POLICY = 'default'

/** How long a start waits for the store to connect (onReady). */
const STORE_CONNECT_WAIT_MS = 1000

/** A failing store is reported at most this often; the requests in between are counted in the next report. */
const STORE_WARNING_INTERVAL_MS = 10_000

/**
 * After the store fails, requests do not ask it for this long, then one request asks it again while the others
 * keep going without it, until one succeeds. A Redis that keeps its connection open but never answers (a network
 * black hole, a blocked server) otherwise cost every request the 200 ms command timeout.
 */
const STORE_BACKOFF_MS = 1000

export interface RateLimiterOptions {
  /** Requests per window per key, at least 1 (RATE_LIMIT_PER_MINUTE; 0 means no limiter is built). */
  limit: number
  /** Whom a request is counted for: by default the authenticated client (provider or marketplace). */
  keyOf?: (request: FastifyRequest) => string
  store: RateLimitStore
  clock: Clock
  /**
   * Called on every request the store failed to count (it is then served unlimited), with the store's error, or
   * while the store is left alone after failing (STORE_BACKOFF_MS) with the error it failed with; must not throw.
   */
  onStoreError?: (error: Error) => void
}

export interface RateLimiter {
  /** onRequest hook, registered after authenticate(): the key is the client's id (provider or marketplace). */
  onRequest: onRequestAsyncHookHandler
  /**
   * onReady hook: gives the store a moment to connect, so that the first requests after a start are counted
   * (and no warning is logged for them). A store still down after it is no reason not to start: requests fail open.
   */
  ready: () => Promise<void>
  close: () => Promise<void>
}

/**
 * Per-provider fixed-window limiting. A request over the limit is 429 with Retry-After; every request counted
 * carries RateLimit-Policy and RateLimit. It fails open: when the store does not answer, requests are served
 * without limit and without those headers, because an unavailable counter must not make the API unavailable.
 */
export function rateLimiter(options: RateLimiterOptions): RateLimiter {
  const { limit, store, clock } = options
  // Provider and marketplace ids differ by prefix (prv_, mkt_), client addresses have their own (addressKey).
  const keyOf = options.keyOf ?? principalIdOf
  const policy = `"${POLICY}";q=${limit};w=${WINDOW_MS / 1000}`
  let nextWarningAtMs = 0
  let unreported = 0
  // Store health, on the monotonic clock (the injected one dates windows, and tests hold it still).
  let lastFailure: { error: Error; retryAtMs: number } | undefined
  let retrying = false

  function storeFailed(request: FastifyRequest, error: Error): void {
    options.onStoreError?.(error)
    unreported += 1
    const now = clock()
    if (now < nextWarningAtMs) return
    request.log.warn({ err: error, requestsServedUnlimited: unreported }, 'rate-limit store failed; serving without limits')
    unreported = 0
    nextWarningAtMs = now + STORE_WARNING_INTERVAL_MS
  }

  async function onRequest(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (lastFailure && (retrying || performance.now() < lastFailure.retryAtMs)) {
      storeFailed(request, lastFailure.error)
      return
    }
    // The first request after the back-off asks the store again; until it is answered, the others go without.
    const isRetry = lastFailure !== undefined
    if (isRetry) retrying = true
    const key = keyOf(request)
    const now = clock()
    let window
    try {
      window = await store.hit(key, now)
      lastFailure = undefined
    } catch (error) {
      lastFailure = { error: error as Error, retryAtMs: performance.now() + STORE_BACKOFF_MS }
      storeFailed(request, error as Error)
      return
    } finally {
      if (isRetry) retrying = false
    }
    // Whole seconds, rounded up so that a client waiting this long finds a fresh window.
    const secondsToReset = Math.max(1, Math.ceil((window.resetAtMs - now) / 1000))
    const remaining = Math.max(0, limit - window.count)
    reply.header('ratelimit-policy', policy)
    reply.header('ratelimit', `"${POLICY}";r=${remaining};t=${secondsToReset}`)
    if (window.count > limit) {
      throw new Problem('rate-limited', `more than ${limit} requests in a minute; retry after ${secondsToReset} seconds`, {
        headers: { 'retry-after': String(secondsToReset) },
      })
    }
  }

  return { onRequest, ready: () => store.ready(STORE_CONNECT_WAIT_MS), close: () => store.close() }
}

export interface RateLimitSettings {
  /** RATE_LIMIT_PER_MINUTE. */
  limit: number
  /** REDIS_URL: set, counts are shared by every instance through Redis; unset, each instance counts alone. */
  redisUrl: string | undefined
  clock: Clock
  /** Redis key prefix (tests isolate themselves with their own). */
  keyPrefix?: string
  keyOf?: (request: FastifyRequest) => string
  onStoreError?: (error: Error) => void
}

/**
 * The key of a request without a token: the address it came from. The socket's, never X-Forwarded-For, which any
 * client can write (the service trusts no proxy header).
 */
export const addressKey = (request: FastifyRequest) => `ip:${request.ip}`

/** The limiter the configuration asks for; none when the limit is 0, so no store is even built. */
export function limiterFromSettings(settings: RateLimitSettings): RateLimiter | undefined {
  if (settings.limit === 0) return undefined
  const store = settings.redisUrl ? new RedisStore({ url: settings.redisUrl, windowMs: WINDOW_MS, keyPrefix: settings.keyPrefix }) : new MemoryStore(WINDOW_MS)
  return rateLimiter({ limit: settings.limit, store, clock: settings.clock, keyOf: settings.keyOf, onStoreError: settings.onStoreError })
}
