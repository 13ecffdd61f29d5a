import type { FastifyPluginAsync } from 'fastify'
import { sql } from 'kysely'
import type { Database } from '../db/connection.js'
import { Problem } from '../errors.js'

const READY_TIMEOUT_MS = 2000

/** Rejects after `ms`, so a database that hangs makes /readyz answer 503 instead of hanging too. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

export const healthRoutes: FastifyPluginAsync<{ database: Database }> = async (app, { database }) => {
  app.get('/healthz', async () => ({ status: 'ok' }))

  app.get('/readyz', async (request) => {
    try {
      await withTimeout(sql`select 1`.execute(database.kysely), READY_TIMEOUT_MS)
      return { status: 'ready' }
    } catch (error) {
      request.log.warn({ err: error }, 'readiness check failed')
      throw new Problem('unavailable', 'the database does not answer')
    }
  })
}
