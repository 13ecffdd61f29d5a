/** One provider's fixed window after counting a request in it. */
export interface WindowCount {
  /** Requests counted in the current window, this one included. */
  count: number
  /** When the current window ends and the count starts again from zero (ms since the Unix epoch). */
  resetAtMs: number
}

/**
 * Where request counts live. Two backends keep the same contract: MemoryStore (one instance) and RedisStore
 * (every instance shares one budget). A window starts with the first request after the previous one ended.
 */
export interface RateLimitStore {
  /** Counts one request for `key` and answers the window it fell in. Rejects when the store cannot answer. */
  hit(key: string, nowMs: number): Promise<WindowCount>
  /** Resolves once the store can answer, or after `timeoutMs` when it cannot yet; never rejects. */
  ready(timeoutMs: number): Promise<void>
  close(): Promise<void>
}
