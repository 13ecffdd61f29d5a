import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../clock.js'
import type { AttemptObserver } from '../metrics.js'
import { eventOf } from '../events/feed.js'
import { Periodic } from '../periodic.js'
import { TrailingBatches } from '../trailing-batches.js'
import type { JobDatabase } from '../db/connection.js'
import { claimDeliveries, nextAttemptAt, recordAttempts, type AttemptRecord, type ClaimedDelivery } from './deliveries.js'
import type { WebhookSender } from './sender.js'
import { signatureHeader } from './signature.js'

export interface DeliveryWorkerOptions {
  db: JobDatabase
  clock: Clock
  sender: WebhookSender
  /** WEBHOOK_TIMEOUT_MS: also sets how long a claim holds a delivery. */
  timeoutMs: number
  /** WEBHOOK_RETRY_SCHEDULE in milliseconds: the wait before each retry. */
  retryDelaysMs: readonly number[]
  logger: FastifyBaseLogger
  /** How often to look for due deliveries when there were none. */
  pollMs?: number
  /** [0, 1): the jitter of retries (tests pin it). */
  random?: () => number
  observer?: AttemptObserver
  /** Requests in flight on the API, on average lately (http/request-pressure.ts): deliveries give way to them. */
  inFlight?: () => number
  /** How many deliveries each claim took: tests wait on it to see that nothing more is due. */
  onClaim?: (taken: number) => void
}

const NO_OBSERVER: AttemptObserver = { attempted: () => {}, firstAttemptLag: () => {} }

/** An endpoint with nothing but failures for this long is disabled. */
export const DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000

/**
 * A claim holds a delivery this much past WEBHOOK_TIMEOUT_MS, room to record the outcome. An attempt cut off by a
 * crash is made again once the lease runs out: within the contract's WEBHOOK_TIMEOUT_MS + 30 s.
 */
const LEASE_MARGIN_MS = 15_000

const CLAIM_BATCH = 100

/** Attempts in flight in this process at most. */
const MAX_IN_FLIGHT = 128

/**
 * Attempts in flight to one endpoint in this process at most, and so the most one claim gives it: with a claim taking
 * tens of milliseconds while the writer is busy, enough for one endpoint to take 500 deliveries a second.
 */
const PER_ENDPOINT = 64

/** How long stop() lets attempts in flight finish before cutting them off, within the drain's grace. */
const DRAIN_GRACE_MS = 6000

/**
 * After a failure this process leaves the endpoint alone this long, so a receiver that refuses at once is not
 * retried as fast as failures can be recorded; short enough to keep a retry within its jitter.
 */
const REST_AFTER_FAILURE_MS = 200

/** While backlogged, attempts ending within this long of each other share one claim (a write transaction). */
const CLAIM_COALESCE_MS = 10

/**
 * From this many requests in flight on average the API is saturated (clients queue for it): deliveries give way
 * however late they fall, since keeping up would take a third of its throughput or more. Below it they go at full
 * speed: giving way to a busy API that still has room only made them come in bursts (record 24).
 */
const SATURATED_IN_FLIGHT = 32

/** While saturated, a claim takes at most this many and only the poll claims. Deliveries never stop. */
const SATURATED_CLAIM = 12

/** Every instance runs one. Due times live in the database, not in timers, so nothing is lost across restarts. */
export class DeliveryWorker {
  readonly #options: Required<DeliveryWorkerOptions>
  readonly #periodic: Periodic
  readonly #recorder: TrailingBatches<AttemptRecord, void>
  readonly #inFlight = new Set<Promise<void>>()
  /** Attempts in flight per endpoint. */
  readonly #running = new Map<string, number>()
  /** Endpoints resting after a failure, until then (performance.now()). */
  readonly #resting = new Map<string, number>()
  /** stop() aborts what is left of these. */
  readonly #cancels = new Set<AbortController>()
  #stopping = false
  /** The last claim left due deliveries behind. */
  #backlogged = false
  #claimSoon?: NodeJS.Timeout

  constructor(options: DeliveryWorkerOptions) {
    this.#options = {
      pollMs: 250,
      random: Math.random,
      observer: NO_OBSERVER,
      inFlight: () => 0,
      onClaim: () => {},
      ...options,
    }
    const { logger, db, clock } = this.#options
    this.#periodic = new Periodic(
      () => this.#claimAndStart(),
      this.#options.pollMs,
      (error) => logger.warn({ err: error }, 'webhook deliveries could not be claimed; trying again'),
    )
    // Outcomes that finish together are recorded by one transaction.
    this.#recorder = new TrailingBatches(
      async (records) => {
        const disabled = await recordAttempts(db, { nowMs: clock(), records, disableAfterMs: DISABLE_AFTER_MS })
        for (const endpointId of disabled) logger.warn({ endpointId }, 'webhook endpoint disabled')
        return records.map(() => ({ ok: true, value: undefined }))
      },
      { maxBatch: 500 },
    )
  }

  start(): void {
    this.#periodic.start()
  }

  /**
   * Lets the attempts in flight finish for a while, then cuts the rest off: their outcome is unknown, so they are
   * not recorded, and their leases let them be made again. Resolves once every known outcome is recorded.
   */
  async stop(graceMs = DRAIN_GRACE_MS): Promise<void> {
    this.#stopping = true
    clearTimeout(this.#claimSoon)
    await this.#periodic.stop()
    const cutOff = setTimeout(() => {
      for (const cancel of this.#cancels) cancel.abort()
    }, graceMs)
    await Promise.all(this.#inFlight)
    clearTimeout(cutOff)
    await this.#options.sender.close()
  }

  async #claimAndStart(): Promise<void> {
    const { db, clock, timeoutMs } = this.#options
    while (!this.#stopping) {
      const limit = Math.min(MAX_IN_FLIGHT - this.#inFlight.size, this.#givingWay() ? SATURATED_CLAIM : CLAIM_BATCH)
      if (limit <= 0) return // the next poll, or an attempt ending while backlogged, starts the next turn
      const nowMs = clock()
      const now = performance.now()
      for (const [endpointId, until] of this.#resting) if (until <= now) this.#resting.delete(endpointId)
      const { deliveries, more } = await claimDeliveries(db.db, {
        nowMs,
        limit,
        leaseUntilMs: nowMs + timeoutMs + LEASE_MARGIN_MS,
        perEndpoint: PER_ENDPOINT,
        running: Object.fromEntries(this.#running),
        resting: [...this.#resting.keys()],
      })
      this.#options.onClaim(deliveries.length)
      for (const delivery of deliveries) this.#start(delivery)
      this.#backlogged = more
      // What is left is for endpoints at their share: their attempts ending will call the next claim. While the
      // API is saturated, the next poll claims again.
      if (this.#givingWay() || !more || deliveries.length < limit) return
    }
  }

  #start(delivery: ClaimedDelivery): void {
    const endpointId = delivery.endpoint_id
    this.#running.set(endpointId, (this.#running.get(endpointId) ?? 0) + 1)
    // The endpoint's slot is free once its answer is in, not once the outcome is recorded: recording waits on the
    // database, and the endpoint would sit idle meanwhile.
    let answered = false
    const answer = () => {
      if (answered) return
      answered = true
      const left = (this.#running.get(endpointId) ?? 1) - 1
      if (left === 0) this.#running.delete(endpointId)
      else this.#running.set(endpointId, left)
      this.#claimAgainIfBacklogged()
    }
    const attempt: Promise<void> = this.#attempt(delivery, answer)
      .catch((error: unknown) => this.#options.logger.warn({ err: error, endpointId }, 'webhook attempt could not be recorded'))
      .finally(() => {
        this.#inFlight.delete(attempt)
        answer()
        this.#claimAgainIfBacklogged()
      })
    this.#inFlight.add(attempt)
  }

  #givingWay(): boolean {
    return this.#options.inFlight() >= SATURATED_IN_FLIGHT
  }

  #claimAgainIfBacklogged(): void {
    if (this.#backlogged && !this.#stopping && !this.#givingWay())
      this.#claimSoon ??= setTimeout(() => {
        this.#claimSoon = undefined
        this.#periodic.wake()
      }, CLAIM_COALESCE_MS)
  }

  async #attempt(delivery: ClaimedDelivery, answered: () => void): Promise<void> {
    const { clock, sender, retryDelaysMs, random, logger, observer } = this.#options
    const body = JSON.stringify(eventOf(delivery, delivery.industry))
    const atMs = clock()
    const timestamp = Math.floor(atMs / 1000)
    const secrets = [delivery.secret]
    if (delivery.previous_secret !== null && Number(delivery.previous_secret_until_ms) > atMs) secrets.push(delivery.previous_secret)
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'listing-service-webhooks',
      'webhook-id': delivery.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, delivery.id, timestamp, body),
    }
    const cancel = new AbortController()
    this.#cancels.add(cancel)
    const result = await sender.send(delivery.url, headers, body, cancel.signal).finally(() => {
      this.#cancels.delete(cancel)
      answered()
    })
    if (result.cancelled) return
    observer.attempted(result.succeeded, result.durationMs / 1000)
    if (delivery.attempts === 0) observer.firstAttemptLag(Math.max(0, atMs - delivery.created_at_ms) / 1000)
    if (!result.succeeded) this.#resting.set(delivery.endpoint_id, performance.now() + REST_AFTER_FAILURE_MS)
    const attempt = delivery.attempts + 1
    const retryAtMs = nextAttemptAt(attempt, result.succeeded, clock(), retryDelaysMs, random())
    // No URL and no secret: the log says which delivery, and how it went.
    logger.debug(
      { endpointId: delivery.endpoint_id, eventId: delivery.id, attempt, status: result.responseStatus, error: result.error, detail: result.logDetail },
      'webhook attempt',
    )
    await this.#recorder.submit('outcomes', {
      deliveryId: delivery.delivery_id,
      ownerId: delivery.owner_id,
      endpointId: delivery.endpoint_id,
      eventId: delivery.id,
      type: delivery.type,
      attempt,
      succeeded: result.succeeded,
      responseStatus: result.responseStatus,
      durationMs: result.durationMs,
      atMs,
      error: result.error,
      retryAtMs,
      gone: result.responseStatus === 410,
    })
  }
}
