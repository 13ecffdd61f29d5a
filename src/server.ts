import { pino, type Logger } from 'pino'
import { buildApp } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { openDatabase } from './db/connection.js'
import { migrate } from './db/migrate.js'
import { ProviderRepository, type IssuedToken } from './providers/repository.js'

/** Contract §8: in-flight requests get this long to finish after SIGTERM/SIGINT before the process gives up. */
const SHUTDOWN_GRACE_MS = 9000

function printDemoToken(demo: IssuedToken, config: Config): void {
  const base = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${config.PORT}`
  process.stdout.write(
    [
      '',
      'No provider existed, so provider "demo" was created. Its API token is shown this once:',
      '',
      `    ${demo.token}`,
      '',
      `Try:  curl -H "Authorization: Bearer ${demo.token}" ${base}/api/v1/listing`,
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
  const database = openDatabase(config.DATABASE_URL, {
    onPoolError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
  })
  const applied = await migrate(database)
  if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated')

  // Never on PostgreSQL: a shared production database must not grow a provider nobody asked for.
  if (database.dialect === 'sqlite') {
    const demo = await new ProviderRepository(database).createDemoIfNone(Date.now())
    if (demo) printDemoToken(demo, config)
  }

  const app = await buildApp({ config, database, logger })
  await app.listen({ port: config.PORT, host: config.HOST })

  let stopping = false
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'draining: no new connections, finishing requests in flight')
    setTimeout(() => {
      logger.error('requests still in flight after the grace period; exiting anyway')
      process.exit(1)
    }, SHUTDOWN_GRACE_MS).unref()
    await app.close()
    await database.close()
    logger.info('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}
