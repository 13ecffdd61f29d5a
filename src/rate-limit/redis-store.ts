import { Redis } from 'ioredis'
import type { RateLimitStore, WindowCount } from './store.js'

export const DEFAULT_KEY_PREFIX = 'listing-service:rate:'

/** How long one count may take before the request is served without it (fail open). */
const COMMAND_TIMEOUT_MS = 200

// One round trip, atomic: the first hit of a window (a key without expiry) starts the window. Checking the
// expiry rather than `count == 1` also heals a key that lost its expiry, which would otherwise never reset.
const HIT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`

interface RateLimitRedis extends Redis {
  rateLimitHit(key: string, windowMs: number): Promise<[count: number, ttlMs: number]>
}

export interface RedisStoreOptions {
  url: string
  windowMs: number
  /** Keys are `<prefix><key>`; tests pass their own prefix to keep to themselves on a shared Redis. */
  keyPrefix?: string
}

/**
 * Counts shared by every instance through Redis. Windows run on Redis's clock (its key expiry), so instances
 * with skewed clocks still share one window. Built to fail fast, never to wait for Redis: no offline queue
 * (a command while disconnected fails at once), a short command timeout, reconnects in the background.
 */
export class RedisStore implements RateLimitStore {
  readonly #redis: RateLimitRedis
  readonly #prefix: string
  readonly #windowMs: number

  constructor(options: RedisStoreOptions) {
    this.#prefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX
    this.#windowMs = options.windowMs
    const redis = new Redis(options.url, {
      enableOfflineQueue: false,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 2000,
      // A command cut off by a dropped connection fails rather than waiting for a reconnect.
      maxRetriesPerRequest: 0,
      // Never gives up: when Redis comes back, limiting resumes without a restart.
      retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    })
    // Without a listener, ioredis writes every failed reconnect's stack to stderr, past the logger, several times
    // a second while Redis is down (an EventEmitter's unheard 'error' would even crash the process). Nothing
    // else is needed here: each request meanwhile fails its hit(), and the limiter reports that at a bounded rate.
    redis.on('error', () => {})
    redis.defineCommand('rateLimitHit', { numberOfKeys: 1, lua: HIT_SCRIPT })
    this.#redis = redis as RateLimitRedis
  }

  async hit(key: string, nowMs: number): Promise<WindowCount> {
    const [count, ttlMs] = await this.#redis.rateLimitHit(this.#prefix + key, this.#windowMs)
    return { count, resetAtMs: nowMs + ttlMs }
  }

  async ready(timeoutMs: number): Promise<void> {
    const redis = this.#redis
    if (redis.status === 'ready') return
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        redis.off('ready', done)
        resolve()
      }
      const timer = setTimeout(done, timeoutMs)
      redis.once('ready', done)
    })
  }

  async close(): Promise<void> {
    // Nothing in flight is worth waiting for, and disconnect() also stops the reconnect loop.
    this.#redis.disconnect()
  }
}
