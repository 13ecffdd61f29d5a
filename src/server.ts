import type { FastifyInstance } from 'fastify'
import { pino, type Logger } from 'pino'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { openDatabase } from './db/connection.js'
import { migrate } from './db/migrate.js'
import { Metrics } from './metrics.js'
import { ProviderRepository, type IssuedToken } from './providers/repository.js'

/** Contract §8: in-flight requests get this long to finish after SIGTERM/SIGINT before the process gives up. */
const SHUTDOWN_GRACE_MS = 9000

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

/** `npm start` / `listing-service serve`: migrate, create the demo provider on a fresh SQLite, listen. */
export async function serve(): Promise<void> {
  const config = configOrExit()
  const logger: Logger = pino({ level: config.LOG_LEVEL })
  if (config.IMAGE_ALLOW_PRIVATE_NETWORKS) {
    logger.warn(
      'IMAGE_ALLOW_PRIVATE_NETWORKS=true: image URLs may reach loopback and private networks. Development and tests only.',
    )
  }
  const metrics = new Metrics()
  const database = openDatabase(config.DATABASE_URL, {
    onPoolError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
    observeQuery: metrics.observeQuery,
  })
  let app: FastifyInstance | undefined

  // Installed before any slow start-up work, so a signal during migration also ends in an orderly exit 0.
  let stopping = false
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'draining: no new connections, finishing requests in flight')
    setTimeout(() => {
      logger.error('requests still in flight after the grace period; exiting anyway')
      process.exit(1)
    }, SHUTDOWN_GRACE_MS).unref()
    await app?.close()
    await database.close()
    logger.info('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)

  const applied = await migrate(database)
  if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated')

  // Never on PostgreSQL: a shared production database must not grow a provider nobody asked for.
  const demo =
    database.dialect === 'sqlite' ? await new ProviderRepository(database).createDemoIfNone(Date.now()) : undefined

  app = await buildApp({ config, database, logger, metrics })
  if (stopping) return
  const address = await app.listen({ port: config.PORT, host: config.HOST })
  // Printed once listening, so the example command names the real port (PORT=0 picks a free one).
  if (demo) printDemoToken(demo, address)
  // The last start-up line: everything above it (migrations, the demo banner) is done.
  logger.info({ address }, 'ready')
}
