import type { Server } from 'node:http'
import type { Clock } from '../clock.js'

/**
 * How busy the API is, for background work that gives way to it: requests in flight, averaged over time, which climbs
 * once clients wait. Not CPU: the webhook worker's own sends would raise that and throttle it while nothing else runs.
 * What counts as busy is the reader's rule (webhooks/worker.ts).
 */
export class RequestPressure {
  #inFlight = 0
  /** ∫ inFlight dt since the last sample, in request·milliseconds, up to #at. */
  #area = 0
  #at: number
  #sampledAt: number
  #average = 0

  constructor(
    /**
     * An average stands this long. Shorter windows say little about load: a burst of deliveries pushes 100 ms windows
     * past the saturation mark while the API still has room.
     */
    private readonly windowMs = 1000,
    /** Monotonic by default: a wall-clock step cannot skew a window. */
    private readonly clock: Clock = () => performance.now(),
  ) {
    this.#at = clock()
    this.#sampledAt = this.#at
  }

  /** Counts every request of `server` until its response ends or its connection closes. */
  watch(server: Server): void {
    server.on('request', (_request, response) => {
      this.#change(1)
      response.once('close', () => this.#change(-1))
    })
  }

  /** Requests in flight on average over the last whole window. */
  average(): number {
    const now = this.clock()
    if (now - this.#sampledAt < this.windowMs) return this.#average
    this.#change(0)
    this.#average = this.#area / (now - this.#sampledAt)
    this.#area = 0
    this.#sampledAt = now
    return this.#average
  }

  #change(by: number): void {
    const now = this.clock()
    this.#area += this.#inFlight * (now - this.#at)
    this.#at = now
    this.#inFlight += by
  }
}
