import type { Server } from 'node:http'

/**
 * How busy the API is, for background work that should give way to it (the webhook worker, worker.ts): the
 * number of HTTP requests in flight, averaged over time. By Little's law that number is arrival rate × latency,
 * so it stays near 1 while the process keeps up (500 creates/s at ~2 ms each) and climbs to the number of
 * clients waiting once it no longer does (50 under the benchmark's saturating load). Requests, not CPU: the
 * worker's own sends would raise a CPU measure and throttle it while nothing else runs.
 */
export class RequestPressure {
  #inFlight = 0
  /** ∫ inFlight dt since the last sample, in request·milliseconds, and when it was last brought up to date. */
  #area = 0
  #at = performance.now()
  #sampledAt = performance.now()
  #busy = false

  constructor(
    /** Average requests in flight from which the API counts as busy. */
    private readonly threshold = 8,
    /** A verdict stands this long: shorter windows say little about load. */
    private readonly windowMs = 100,
  ) {}

  /** Counts every request of `server` from its arrival until its response ends or its connection closes. */
  watch(server: Server): void {
    server.on('request', (_request, response) => {
      this.#change(1)
      response.once('close', () => this.#change(-1))
    })
  }

  /** Whether requests waited in numbers (the threshold, on average) over the last window. */
  busy(): boolean {
    const now = performance.now()
    if (now - this.#sampledAt < this.windowMs) return this.#busy
    this.#change(0)
    this.#busy = this.#area / (now - this.#sampledAt) >= this.threshold
    this.#area = 0
    this.#sampledAt = now
    return this.#busy
  }

  #change(by: number): void {
    const now = performance.now()
    this.#area += this.#inFlight * (now - this.#at)
    this.#at = now
    this.#inFlight += by
  }
}
