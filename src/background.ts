import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from './clock.js'
import { isDatabaseUnavailable } from './db/dialect.js'
import { recordExpiries, SWEEP_INTERVAL_MS } from './listings/expiry.js'
import { Periodic } from './periodic.js'
import type { Writes } from './writes/writes.js'

export interface BackgroundJobs {
  /** Waits for the runs in progress; nothing starts after it is called. */
  stop(): Promise<void>
}

export interface BackgroundDependencies {
  writes: Writes
  clock: Clock
  logger: FastifyBaseLogger
}

/**
 * The work every instance does besides answering requests: recording expiries. It runs on every instance at
 * once, safely (the scripts take their rows with SKIP LOCKED). server.ts starts it once listening and stops it
 * with the drain, before the database closes.
 */
export function startBackgroundJobs({ writes, clock, logger }: BackgroundDependencies): BackgroundJobs {
  const onError = (job: string) => (error: unknown) => {
    // An outage is reported by requests too; the job simply tries again at its next turn.
    if (isDatabaseUnavailable(error)) logger.warn({ err: error, job }, 'background job: database unavailable')
    else logger.error({ err: error, job }, 'background job failed')
  }
  const expiries = new Periodic(
    async () => {
      const expired = await recordExpiries(writes, clock)
      if (expired > 0) logger.info({ expired }, 'expiries recorded')
    },
    SWEEP_INTERVAL_MS,
    onError('expiries'),
  )
  expiries.start()
  return { stop: () => expiries.stop() }
}
