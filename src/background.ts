import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from './clock.js'
import { retryDelaysMs, type Config } from './config.js'
import { isDatabaseUnavailable } from './db/dialect.js'
import type { JobDatabase } from './db/connection.js'
import { PRUNE_BATCH, PRUNE_INTERVAL_MS, pruneEvents } from './events/retention.js'
import { anyAddress, publicAddressesOnly } from './images/address-policy.js'
import { openImageStore, type ImageStore } from './images/image-store.js'
import { REMOVAL_BATCH, removeUnusedImages } from './images/uploads.js'
import { recordExpiries, SWEEP_INTERVAL_MS } from './listings/expiry.js'
import type { Metrics } from './metrics.js'
import { Periodic } from './periodic.js'
import { WebhookSender } from './webhooks/sender.js'
import { DeliveryWorker } from './webhooks/worker.js'

export interface BackgroundJobs {
  /** Waits for the runs in progress (webhook attempts are cut off after a while); nothing starts after. */
  stop(): Promise<void>
}

export interface BackgroundDependencies {
  db: JobDatabase
  clock: Clock
  logger: FastifyBaseLogger
  metrics: Metrics
  /** Requests in flight on the API, on average lately: webhook deliveries give way to them. */
  inFlight: () => number
  config: Pick<
    Config,
    | 'EVENT_RETENTION_DAYS'
    | 'WEBHOOK_TIMEOUT_MS'
    | 'WEBHOOK_RETRY_SCHEDULE'
    | 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'
    | 'IMAGE_UNUSED_DAYS'
    | 'IMAGE_STORE_URL'
    | 'S3_ENDPOINT'
    | 'AWS_REGION'
  >
}

const DAY_MS = 24 * 3600 * 1000

/** Safe on every instance at once: the jobs take their rows with SKIP LOCKED or a lease. */
export function startBackgroundJobs({ db, clock, logger, metrics, inFlight, config }: BackgroundDependencies): BackgroundJobs {
  const onError = (job: string) => (error: unknown) => {
    // Requests report an outage too; the job tries again at its next turn.
    if (isDatabaseUnavailable(error)) logger.warn({ err: error, job }, 'background job: database unavailable')
    else logger.error({ err: error, job }, 'background job failed')
  }
  const expiries = new Periodic(
    async () => {
      const expired = await recordExpiries(db, clock)
      if (expired > 0) logger.info({ expired }, 'expiries recorded')
    },
    SWEEP_INTERVAL_MS,
    onError('expiries'),
  )
  const retention = new Periodic(
    async () => {
      const beforeMs = clock() - config.EVENT_RETENTION_DAYS * DAY_MS
      let pruned = 0
      for (;;) {
        const batch = await pruneEvents(db, { beforeMs, limit: PRUNE_BATCH })
        pruned += batch
        if (batch < PRUNE_BATCH) break
      }
      if (pruned > 0) logger.info({ pruned }, 'events past their retention removed')
    },
    PRUNE_INTERVAL_MS,
    onError('retention'),
  )
  let store: Promise<ImageStore> | undefined
  const unusedImages = new Periodic(
    async () => {
      const beforeMs = clock() - config.IMAGE_UNUSED_DAYS * DAY_MS
      let removed = 0
      for (;;) {
        const batch = await removeUnusedImages(db, await (store ??= openImageStore(config)), { beforeMs, limit: REMOVAL_BATCH })
        removed += batch
        if (batch < REMOVAL_BATCH) break
      }
      if (removed > 0) logger.info({ removed }, 'uploaded images no listing names removed')
    },
    PRUNE_INTERVAL_MS,
    onError('unused images'),
  )
  const deliveries = new DeliveryWorker({
    db,
    clock,
    logger,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    retryDelaysMs: retryDelaysMs(config),
    observer: metrics.webhookAttempts,
    inFlight,
    sender: new WebhookSender({
      policy: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS ? anyAddress : publicAddressesOnly,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    }),
  })
  expiries.start()
  retention.start()
  unusedImages.start()
  deliveries.start()
  return { stop: () => Promise.all([expiries.stop(), retention.stop(), unusedImages.stop(), deliveries.stop()]).then(() => {}) }
}
