import type { RateLimitStore, WindowCount } from './limiter.js'

/**
 * Counts in this process only. A sweep once per window drops expired keys, so memory holds about two windows' keys.
 * Time is the caller's, so tests move it instead of sleeping.
 */
export class MemoryStore implements RateLimitStore {
  readonly #windows = new Map<string, WindowCount>()
  #nextSweepAtMs = 0

  constructor(private readonly windowMs: number) {}

  async hit(key: string, nowMs: number): Promise<WindowCount> {
    if (nowMs >= this.#nextSweepAtMs) this.#sweep(nowMs)
    let window = this.#windows.get(key)
    if (!window || window.resetAtMs <= nowMs) {
      window = { count: 0, resetAtMs: nowMs + this.windowMs }
      this.#windows.set(key, window)
    }
    window.count += 1
    return { ...window }
  }

  /** Windows held now. */
  get size(): number {
    return this.#windows.size
  }

  async ready(): Promise<void> {}

  async close(): Promise<void> {
    this.#windows.clear()
  }

  #sweep(nowMs: number): void {
    for (const [key, window] of this.#windows) if (window.resetAtMs <= nowMs) this.#windows.delete(key)
    this.#nextSweepAtMs = nowMs + this.windowMs
  }
}
