import { Redis } from 'ioredis'
import type { RateLimitStore, WindowCount } from './limiter.js'

/** How long one count may take before the request is served without it. */
const COMMAND_TIMEOUT_MS = 200

// Atomic, one round trip: a key without expiry starts its window. Checking the expiry rather than `count == 1`
// also heals a key that lost its expiry, which would otherwise never reset.
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

/**
 * Counts shared by every instance. Windows run on Redis's clock (key expiry), so instances with skewed clocks
 * share one window. It fails fast rather than wait for Redis.
 */
export class RedisStore implements RateLimitStore {
  readonly #redis: RateLimitRedis
  readonly #prefix: string
  readonly #windowMs: number

  constructor(options: { url: string; windowMs: number; keyPrefix?: string }) {
    this.#prefix = options.keyPrefix ?? 'listing-service:rate:'
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
    // Without a listener ioredis writes every failed reconnect to stderr, past the logger (and an unheard 'error'
    // could crash the process). The limiter reports the failed hits at a bounded rate instead.
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
    // Nothing in flight is worth waiting for; disconnect() also stops reconnecting.
    this.#redis.disconnect()
  }
}
