import { resolve } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { pino, type Logger } from 'pino'
import { buildApp } from './app.js'
import { startBackgroundJobs, type BackgroundJobs } from './background.js'
import { systemClock } from './clock.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { jobDatabase, openDatabase, parseDatabaseUrl } from './db/connection.js'
import { migrate, missingRoleSettings, pendingMigrations } from './db/migrate.js'
import { Drain } from './http/drain.js'
import { RequestPressure } from './http/request-pressure.js'
import { logDestination } from './log-output.js'
import { metricsListener } from './http/metrics-route.js'
import { Metrics } from './metrics.js'
import { ProviderRepository, type IssuedToken } from './providers/repository.js'

/**
 * After SIGTERM/SIGINT the process exits 0 within 10 s. Milliseconds from the signal:
 * - CUT_WAITING_AT: requests still waiting on image probes answer 503, having stored nothing
 *   (IMAGE_FETCH_TIMEOUT_MS may be longer than the grace).
 * - DROP_CONNECTIONS_AT: connections still open are dropped; such a request was never acknowledged, and a listing
 *   is written all or nothing.
 * - GIVE_UP_AT: something still hangs (the database does not answer its close): exit 1, not overrun.
 */
const CUT_WAITING_AT_MS = 8000
const DROP_CONNECTIONS_AT_MS = 9000
const GIVE_UP_AT_MS = 9800

function printDemoToken(demo: IssuedToken, baseUrl: string): void {
  process.stdout.write(
    [
      '',
      'No provider existed, so provider "demo" was created. Its API token is shown this once:',
      '',
      `    ${demo.token}`,
      '',
      `Try:  curl -H "Authorization: Bearer ${demo.token}" ${baseUrl}/api/v1/listing`,
      '',
      '',
    ].join('\n'),
  )
}

/** Where the data is kept, for the ready line: a file's full path, or a database URL without its password. */
function whereDataLives(databaseUrl: string): string {
  const target = parseDatabaseUrl(databaseUrl)
  if (target.dialect === 'sqlite') return target.path === ':memory:' ? 'SQLite in memory (gone when the process ends)' : `SQLite file ${resolve(target.path)}`
  try {
    const url = new URL(target.url)
    url.password = ''
    return `PostgreSQL ${url.toString()}`
  } catch {
    // libpq's form with the host as a parameter (postgres://user:secret@/db?host=/run/postgresql) is no WHATWG URL, yet pg takes it.
    return `PostgreSQL ${target.url.replace(/^(postgres(?:ql)?:\/\/[^:@/]*):[^@/]*@/, '$1@')}`
  }
}

/** Loads config or exits 1 with one stderr line naming the bad variable, before anything else happens. */
function configOrExit(): Config {
  try {
    return loadConfig(process.env)
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    process.stderr.write(`listing-service: invalid configuration: ${error.message}\n`)
    process.exit(1)
  }
}

export interface ServeOptions {
  /**
   * false (`serve --no-migrate`): for a hot standby, or where migrating is a deploy step of its own. The start
   * then fails, before listening, if the database lacks a migration.
   */
  migrate?: boolean
}

export async function serve(options: ServeOptions = {}): Promise<void> {
  const config = configOrExit()
  // Synchronous, so a crash loses no line and a broken pipe ends logging at once: pino's asynchronous exit flush
  // retries it forever, blocking the event loop past the drain's bound.
  const logger: Logger = pino({ level: config.LOG_LEVEL }, logDestination())
  if (config.IMAGE_ALLOW_PRIVATE_NETWORKS) {
    logger.warn('IMAGE_ALLOW_PRIVATE_NETWORKS=true: image URLs may reach loopback and private networks. Development and tests only.')
  }
  if (config.WEBHOOK_ALLOW_PRIVATE_NETWORKS) {
    logger.warn('WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: webhooks may reach loopback and private networks. Development and tests only.')
  }
  const metrics = new Metrics()
  const database = openDatabase(config.DATABASE_URL, {
    readUrl: config.DATABASE_READ_URL,
    poolerPrepares: config.DATABASE_POOLER_PREPARES,
    onPoolError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
    observeQuery: metrics.observeQuery,
  })
  let app: FastifyInstance | undefined
  let jobs: BackgroundJobs | undefined
  let metricsPort: Awaited<ReturnType<typeof metricsListener>> | undefined

  // Installed before any slow start-up work, so a signal during migration also ends in an orderly exit 0.
  const drain = new Drain()
  let stopping = false
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.info({ signal }, 'already draining')
      return
    }
    stopping = true
    drain.start()
    logger.info({ signal }, 'draining: no new connections, finishing requests in flight')
    const after = (ms: number, step: () => void) => setTimeout(step, ms).unref()
    after(CUT_WAITING_AT_MS, () => {
      if (drain.waiting > 0) logger.warn({ requests: drain.waiting }, 'grace running out: requests waiting on images answer 503')
      drain.cut()
    })
    after(DROP_CONNECTIONS_AT_MS, () => app?.server.closeAllConnections())
    after(GIVE_UP_AT_MS, () => {
      logger.error('shutdown did not finish within the grace period; exiting anyway')
      process.exit(1)
    })
    try {
      // The background jobs' writes finish before the database closes.
      await Promise.all([app?.close(), jobs?.stop(), metricsPort?.close()])
      await database.close()
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed')
      process.exit(1)
    }
    logger.info('stopped')
    process.exit(0)
  }
  // stop() catches its own failures and ends the process itself.
  process.on('SIGTERM', (signal) => void stop(signal))
  process.on('SIGINT', (signal) => void stop(signal))

  if (options.migrate === false) {
    const pending = await pendingMigrations(database)
    if (pending.length > 0) {
      throw new Error(`started with --no-migrate, but the database lacks migrations: ${pending.join(', ')}; run \`listing-service migrate\` first`)
    }
  } else {
    const applied = await migrate(database)
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated')
  }
  const missing = await missingRoleSettings(database)
  if (missing.length > 0) {
    // migrate() sets them for the role it runs as; another role, or a database migrated by an older version, runs
    // without them (no statement bound).
    logger.warn(
      { missing },
      'the database role lacks its settings: run `listing-service migrate` as this role, or ALTER ROLE <role> IN DATABASE <database> SET … (docs/postgresql.md)',
    )
  }

  // Never on PostgreSQL: a shared production database must not grow a provider nobody asked for.
  const demo = database.dialect === 'sqlite' ? await new ProviderRepository(database).createDemoIfNone(Date.now()) : undefined

  app = await buildApp({ config, database, logger, metrics, drain })
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- a signal may have set it during the awaits above.
  if (stopping) return
  const address = await app.listen({ port: config.PORT, host: config.HOST })
  if (config.METRICS_PORT !== undefined) metricsPort = await metricsListener(metrics, config.METRICS_PORT, config.HOST)
  const pressure = new RequestPressure()
  pressure.watch(app.server)
  jobs = startBackgroundJobs({ db: jobDatabase(database), clock: systemClock, logger, metrics, inFlight: () => pressure.average(), config })
  // Printed once listening, so the example command names the real port (PORT=0 picks a free one).
  if (demo) printDemoToken(demo, address)
  // The last start-up line: everything above it is done.
  const reads = config.DATABASE_READ_URL === undefined ? undefined : whereDataLives(config.DATABASE_READ_URL)
  logger.info(
    { address, docs: `${address}/docs`, metrics: `${metricsPort?.address ?? address}/metrics`, data: whereDataLives(config.DATABASE_URL), reads },
    'ready',
  )
}
