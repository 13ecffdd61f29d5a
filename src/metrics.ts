import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'
import type { QueryOperation } from './db/query-operation.js'
import type { ReplicaReadOutcome } from './db/read-your-writes.js'
import type { ImageWork, ProbeObserver, ProbeOutcome } from './images/prober.js'

const PROBE_OUTCOMES: readonly ProbeOutcome[] = ['ok', 'image-unavailable', 'image-too-large', 'unsupported-image-format']
const REUSE_SOURCES = ['cache', 'in-flight'] as const
const QUERY_OPERATIONS: readonly QueryOperation[] = ['select', 'insert', 'update', 'delete', 'other']
const REPLICA_READ_OUTCOMES: readonly ReplicaReadOutcome[] = ['replica', 'primary-behind', 'primary-failed']

/** The route label of requests no route matched: a raw URL would let any client create label values at will. */
export const UNMATCHED_ROUTE = 'unmatched'

/** What the webhook delivery worker reports. */
export interface AttemptObserver {
  attempted(succeeded: boolean, seconds: number): void
  firstAttemptLag(seconds: number): void
}

/**
 * Every metric of GET /metrics, in a registry of its own so that several apps in one process (the tests) never
 * collide. Label values are bounded and never name a URL, provider or token.
 */
export class Metrics {
  readonly #registry = new Registry()

  readonly #requests = new Counter({
    name: 'listing_http_requests_total',
    help: 'HTTP requests answered, by method, route template ("unmatched" when no route matched) and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.#registry],
  })

  readonly #requestDuration = new Histogram({
    name: 'listing_http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its response, by method, route template and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.#registry],
  })

  readonly #probes = new Counter({
    name: 'listing_image_probes_total',
    help: 'Images fetched and judged, by outcome: ok, image-unavailable, image-too-large, unsupported-image-format.',
    labelNames: ['outcome'] as const,
    registers: [this.#registry],
  })

  readonly #probeDuration = new Histogram({
    name: 'listing_image_probe_duration_seconds',
    help: 'Time to fetch and judge one image (connect, redirects and body; not the wait for a free slot), by outcome.',
    labelNames: ['outcome'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.#registry],
  })

  readonly #probeReuses = new Counter({
    name: 'listing_image_probe_reuses_total',
    help: 'Image verdicts given without a fetch: "cache" (a success of the last 10 minutes) or "in-flight" (joined a fetch of the same URL under way).',
    labelNames: ['source'] as const,
    registers: [this.#registry],
  })

  /** Read at each scrape. */
  #imageWork: () => ImageWork = () => ({ checks: 0, running: 0, waiting: 0 })

  readonly #imageChecks: Gauge = new Gauge({
    name: 'listing_image_checks_in_progress',
    help: 'Creates waiting on their image checks now.',
    registers: [this.#registry],
    collect: (): void => this.#imageChecks.set(this.#imageWork().checks),
  })

  readonly #imageProbesNow: Gauge<'state'> = new Gauge({
    name: 'listing_image_probes_in_progress',
    help: 'Image probes now, by state: running (a fetch under way) or waiting (for a free fetch slot).',
    labelNames: ['state'] as const,
    registers: [this.#registry],
    collect: (): void => {
      const { running, waiting } = this.#imageWork()
      this.#imageProbesNow.set({ state: 'running' }, running)
      this.#imageProbesNow.set({ state: 'waiting' }, waiting)
    },
  })

  readonly #queryDuration = new Histogram({
    name: 'listing_db_query_duration_seconds',
    help: 'Database query time, failed queries included, by operation: select, insert, update, delete, other (DDL, BEGIN, COMMIT…).',
    labelNames: ['operation'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.#registry],
  })

  readonly #webhookAttempts = new Histogram({
    name: 'listing_webhook_attempt_duration_seconds',
    help: 'Webhook attempts (POST to a receiver until its status, or the failure), by outcome: succeeded, failed.',
    labelNames: ['outcome'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.#registry],
  })

  readonly #webhookLag = new Histogram({
    name: 'listing_webhook_first_attempt_lag_seconds',
    help: "Time from an event's commit to the start of its first delivery attempt (contract: within 5 s).",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.#registry],
  })

  readonly #rateLimitStoreErrors = new Counter({
    name: 'listing_rate_limit_store_errors_total',
    help: 'Errors of the shared rate-limit store (Redis).',
    registers: [this.#registry],
  })

  readonly #replicaReads = new Counter({
    name: 'listing_replica_reads_total',
    help:
      'Reads meant for the standby (DATABASE_READ_URL), by who answered: replica; primary-behind (the standby had not replayed ' +
      "the provider's writes); primary-failed (the standby was unavailable).",
    labelNames: ['outcome'] as const,
    registers: [this.#registry],
  })

  constructor() {
    collectDefaultMetrics({ register: this.#registry })
    // Known label values start at 0, so that a rate exists before their first event.
    for (const outcome of PROBE_OUTCOMES) {
      this.#probes.inc({ outcome }, 0)
      this.#probeDuration.zero({ outcome })
    }
    for (const source of REUSE_SOURCES) this.#probeReuses.inc({ source }, 0)
    for (const operation of QUERY_OPERATIONS) this.#queryDuration.zero({ operation })
    for (const outcome of ['succeeded', 'failed']) this.#webhookAttempts.zero({ outcome })
    for (const outcome of REPLICA_READ_OUTCOMES) this.#replicaReads.inc({ outcome }, 0)
  }

  /** ReadYourWrites' observer. */
  readonly countReplicaRead = (outcome: ReplicaReadOutcome): void => {
    this.#replicaReads.inc({ outcome })
  }

  readonly webhookAttempts: AttemptObserver = {
    attempted: (succeeded, seconds) => this.#webhookAttempts.observe({ outcome: succeeded ? 'succeeded' : 'failed' }, seconds),
    firstAttemptLag: (seconds) => this.#webhookLag.observe(seconds),
  }

  /** `route` is a route template or UNMATCHED_ROUTE. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status }
    this.#requests.inc(labels)
    this.#requestDuration.observe(labels, seconds)
  }

  readonly imageProbes: ProbeObserver = {
    probed: (outcome: ProbeOutcome, seconds: number) => {
      this.#probes.inc({ outcome })
      this.#probeDuration.observe({ outcome }, seconds)
    },
    reused: (source: (typeof REUSE_SOURCES)[number], count = 1) => this.#probeReuses.inc({ source }, count),
  }

  /** The source of the image work gauges. */
  watchImageWork(read: () => ImageWork): void {
    this.#imageWork = read
  }

  readonly observeQuery = (operation: QueryOperation, seconds: number): void => {
    this.#queryDuration.observe({ operation }, seconds)
  }

  /** Fits the rate limiter's onStoreError; the error itself is the limiter's to log. */
  readonly countRateLimitStoreError = (_error?: unknown): void => {
    this.#rateLimitStoreErrors.inc()
  }

  async exposition(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.#registry.contentType, text: await this.#registry.metrics() }
  }
}
