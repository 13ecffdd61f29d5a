import { CompiledQuery } from 'kysely'
import type { Database } from '../db/connection.js'
import type { QueryOperation } from '../db/query-operation.js'
import { runAsync, scriptSql } from '../db/script.js'
import { sqliteBatchRunner } from './sqlite-batch.js'
import { settle, SqliteWriteThread } from './sqlite-thread.js'
import { startScript, type ScriptArgs, type ScriptJob, type ScriptName, type ScriptResult } from './scripts.js'

/** Where the service's write scripts run (scripts.ts): one per process and database. */
export interface Writes {
  /** Runs the script in a transaction of its own (on SQLite, a savepoint of a shared one) and gives its result. */
  run<N extends ScriptName>(name: N, args: ScriptArgs<N>): Promise<ScriptResult<N>>
  close(): Promise<void>
}

/** The metric label of a script's time: a create inserts, every other script changes rows. */
const operationOf = (job: ScriptJob): QueryOperation => (job.name === 'createListing' ? 'insert' : 'update')

/**
 * SQLite file: the writer thread (sqlite-thread.ts). SQLite in memory: the database exists only on its own
 * connection, so scripts run there, in line. PostgreSQL: each script in one transaction on a pooled connection,
 * with the bounds every request query has (connection.ts); its statements are named and prepared once.
 */
export function openWrites(database: Database): Writes {
  const observe = (job: ScriptJob, seconds: number) => database.observeQuery?.(operationOf(job), seconds)
  const { sqlite } = database
  if (sqlite && sqlite.path !== ':memory:') {
    const thread = new SqliteWriteThread(sqlite.path, observe)
    return { run: (name, args) => thread.run({ name, args }) as never, close: () => thread.close() }
  }
  if (sqlite) {
    const runBatch = sqliteBatchRunner(sqlite.connection)
    return {
      run: async (name, args) => {
        const job = { name, args }
        const started = performance.now()
        const [outcome] = runBatch([job])
        observe(job, (performance.now() - started) / 1000)
        return settle(outcome as NonNullable<typeof outcome>) as never
      },
      close: async () => {},
    }
  }
  return {
    run: (name, args) =>
      database.kysely.transaction().execute((trx) =>
        runAsync(startScript(scriptSql.postgres, { name, args }), async (text, params) => {
          const result = await trx.executeQuery(CompiledQuery.raw(text, [...params]))
          return result.rows
        }),
      ) as never,
    close: async () => {},
  }
}
