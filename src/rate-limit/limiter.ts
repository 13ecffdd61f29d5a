import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import type { Clock } from '../clock.js'
import { Problem } from '../errors.js'
import { principalIdOf } from '../providers/authenticate.js'
import { MemoryStore } from './memory-store.js'
import { RedisStore } from './redis-store.js'

/** One key's fixed window after counting a request in it. */
export interface WindowCount {
  /** Requests counted in the window, this one included. */
  count: number
  /** When the window ends (ms since the Unix epoch). */
  resetAtMs: number
}

/** Where request counts live: MemoryStore (one instance) or RedisStore (every instance shares one budget). */
export interface RateLimitStore {
  /** Counts one request for `key`; rejects when the store cannot answer. */
  hit(key: string, nowMs: number): Promise<WindowCount>
  /** Resolves once the store can answer, or after `timeoutMs`; never rejects. */
  ready(timeoutMs: number): Promise<void>
  close(): Promise<void>
}

const WINDOW_MS = 60_000

// The one policy, named in both headers so a client can match them (draft-ietf-httpapi-ratelimit-headers).
const POLICY = 'default'

/** How long a start waits for the store to connect, so the first requests are counted. */
const STORE_CONNECT_WAIT_MS = 1000

/** A failing store is reported at most this often; the requests in between are counted in the next report. */
const STORE_WARNING_INTERVAL_MS = 10_000

/**
 * After the store fails, requests do not ask it for this long; then one asks while the others go without, until
 * one succeeds. A Redis that holds its connection open but never answers would otherwise delay every request.
 */
const STORE_BACKOFF_MS = 1000

export interface RateLimitSettings {
  /** RATE_LIMIT_PER_MINUTE; 0 builds no limiter. */
  limit: number
  /** REDIS_URL: set, every instance shares the counts; unset, each counts alone. */
  redisUrl: string | undefined
  clock: Clock
  /** Redis key prefix (tests isolate themselves with their own). */
  keyPrefix?: string
  /** Whom a request is counted for: by default the authenticated client (provider or marketplace). */
  keyOf?: (request: FastifyRequest) => string
  /** Called for every request the store failed to count (it is served unlimited); must not throw. */
  onStoreError?: (error: Error) => void
}

export interface RateLimiter {
  /** onRequest hook, after authenticate(). */
  onRequest: onRequestAsyncHookHandler
  /** onReady hook: gives the store a moment to connect. A store still down is no reason not to start. */
  ready: () => Promise<void>
  close: () => Promise<void>
}

/** The key of a request without a token: the socket's address, never X-Forwarded-For, which any client can write. */
export const addressKey = (request: FastifyRequest) => `ip:${request.ip}`

/**
 * Fixed-window limiting per client, or none when the limit is 0. It fails open: an unavailable counter must not make
 * the API unavailable, so requests the store does not count are served without limit and without RateLimit headers.
 */
export function limiterFromSettings(settings: RateLimitSettings): RateLimiter | undefined {
  const { limit, clock } = settings
  if (limit === 0) return undefined
  const store: RateLimitStore = settings.redisUrl
    ? new RedisStore({ url: settings.redisUrl, windowMs: WINDOW_MS, keyPrefix: settings.keyPrefix })
    : new MemoryStore(WINDOW_MS)
  // Provider and marketplace ids differ by prefix (prv_, mkt_), addresses have their own (addressKey).
  const keyOf = settings.keyOf ?? principalIdOf
  const policy = `"${POLICY}";q=${limit};w=${WINDOW_MS / 1000}`
  let nextWarningAtMs = 0
  let unreported = 0
  // On the monotonic clock: the injected one dates windows, and tests hold it still.
  let lastFailure: { error: Error; retryAtMs: number } | undefined
  let retrying = false

  function storeFailed(request: FastifyRequest, error: Error): void {
    settings.onStoreError?.(error)
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
    // Rounded up, so that a client waiting this long finds a fresh window.
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
