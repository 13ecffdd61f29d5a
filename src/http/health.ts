import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sql, type Kysely } from 'kysely'
import { Type } from 'typebox'
import type { Database } from '../db/connection.js'
import type { Tables } from '../db/tables.js'
import { Problem } from '../errors.js'
import { jsonResponse } from './openapi.js'

const READY_TIMEOUT_MS = 2000

/** Rejects after `ms`, so a database that hangs makes /readyz answer 503 instead of hanging too. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

const Alive = Type.Object({ status: Type.Literal('ok') })
const Ready = Type.Object({
  status: Type.Literal('ready'),
  database: Type.Union([Type.Literal('primary'), Type.Literal('standby')], {
    description:
      'What the instance reaches: `primary` (it accepts writes; SQLite is always that), or `standby` (a PostgreSQL hot standby, in recovery: reads only).',
  }),
  readDatabase: Type.Optional(
    Type.Union([Type.Literal('primary'), Type.Literal('standby'), Type.Literal('unavailable')], {
      description:
        'Only with `DATABASE_READ_URL`: what it reaches, `standby` as expected, `primary`, or `unavailable` (it does not answer: reads go to `database` meanwhile, so the instance stays ready).',
    }),
  ),
})

type Role = 'primary' | 'standby'

async function postgresRole(db: Kysely<Tables>): Promise<Role> {
  const { rows } = await sql<{ standby: boolean }>`select pg_is_in_recovery() as standby`.execute(db)
  return rows[0]?.standby ? 'standby' : 'primary'
}

/** The role of the database writes go to; a SQLite file has no standby. */
async function databaseRole(database: Database): Promise<Role> {
  if (database.dialect !== 'postgres') {
    await sql`select 1`.execute(database.kysely)
    return 'primary'
  }
  return postgresRole(database.kysely)
}

/** DATABASE_READ_URL's role, or `unavailable`: reads then fall back to the primary. */
async function readDatabaseRole(replica: Kysely<Tables>): Promise<Role | 'unavailable'> {
  try {
    return await withTimeout(postgresRole(replica), READY_TIMEOUT_MS)
  } catch {
    return 'unavailable'
  }
}

export const healthRoutes: FastifyPluginAsyncTypebox<{ database: Database }> = async (app, { database }) => {
  app.get(
    '/healthz',
    {
      schema: {
        operationId: 'checkLiveness',
        tags: ['operations'],
        // No token needed: an empty list says so (an absent one would mean "not stated").
        security: [],
        summary: 'Liveness',
        description: 'Answers 200 while the process runs; it touches nothing else.',
        response: { 200: jsonResponse('The process runs.', Alive, { alive: { status: 'ok' } }) },
      },
    },
    async () => ({ status: 'ok' }) as const,
  )

  app.get(
    '/readyz',
    {
      schema: {
        operationId: 'checkReadiness',
        tags: ['operations'],
        security: [],
        summary: 'Readiness',
        description: `Answers 200 when the database answers a query within ${READY_TIMEOUT_MS} ms, else 503. The body says whether the database reached is a primary or a standby, and so of the read database when one is configured.`,
        response: {
          200: jsonResponse('The database answers.', Ready, {
            ready: { status: 'ready', database: 'primary' },
            withStandby: { status: 'ready', database: 'primary', readDatabase: 'standby' },
          }),
        },
        'x-problems': ['unavailable'],
      },
    },
    async (request) => {
      const readDatabase = database.replica && readDatabaseRole(database.replica)
      try {
        return { status: 'ready' as const, database: await withTimeout(databaseRole(database), READY_TIMEOUT_MS), readDatabase: await readDatabase }
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed')
        throw new Problem('unavailable', 'the database does not answer')
      }
    },
  )
}
