import type { Server } from 'node:http'
import type { Clock } from '../clock.js'

/**
 * How busy the API is, for background work that should give way to it (the webhook worker, worker.ts): the
 * number of HTTP requests in flight, averaged over time. By Little's law that number is arrival rate × latency,
 * so it stays low while the process keeps up and climbs to the number of clients waiting once it no longer does
 * (docs/benchmarks.md has the figures). Requests, not CPU: the worker's own sends would raise a CPU measure and
 * throttle it while nothing else runs.
 */
export class RequestPressure {
  #inFlight = 0
  /** ∫ inFlight dt since the last sample, in request·milliseconds, and when it was last brought up to date. */
  #area = 0
  #at: number
  #sampledAt: number
  #busy = false

  constructor(
    /** Average requests in flight from which the API counts as busy. */
    private readonly threshold = 8,
    /** A verdict stands this long: shorter windows say little about load. */
    private readonly windowMs = 100,
    /** Only differences are used: a monotonic clock by default, so a wall-clock step cannot skew a window. */
    private readonly clock: Clock = () => performance.now(),
  ) {
    this.#at = clock()
    this.#sampledAt = this.#at
  }

  /** Counts every request of `server` from its arrival until its response ends or its connection closes. */
  watch(server: Server): void {
    server.on('request', (_request, response) => {
      this.#change(1)
      response.once('close', () => this.#change(-1))
    })
  }

  /** Whether requests waited in numbers (the threshold, on average) over the last window. */
  busy(): boolean {
    const now = this.clock()
    if (now - this.#sampledAt < this.windowMs) return this.#busy
    this.#change(0)
    this.#busy = this.#area / (now - this.#sampledAt) >= this.threshold
    this.#area = 0
    this.#sampledAt = now
    return this.#busy
  }

  #change(by: number): void {
    const now = this.clock()
    this.#area += this.#inFlight * (now - this.#at)
    this.#at = now
    this.#inFlight += by
  }
}
