/** The SQLite writer thread: every write of a SQLite file runs on its connection. */
import { parentPort, workerData } from 'node:worker_threads'
import { Kysely, SqliteDialect, type CompiledQuery, type ControlledTransaction } from 'kysely'
import { serveRequests } from '../start-worker.js'
import type { Settled } from '../trailing-batches.js'
import { openSqliteConnection } from './sqlite-connection.js'
import { runsDirectly } from './prepared-query.js'
import { withStatementCache } from './sqlite-statements.js'
import type { Tables } from './tables.js'
import { queryOperation } from './query-operation.js'
import type { TimedQuery, TransactAnswer, WriterRequest } from './sqlite-writer-thread.js'
import { writeTransactions, type WriteTransactionName } from './write-transactions.js'

if (!parentPort) throw new Error('sqlite-writer-worker runs as a worker thread')
const statements = withStatementCache(openSqliteConnection((workerData as { path: string }).path))
/** The queries of the transaction running now, each with how long it took: sent back for the service's metrics. */
let queries: TimedQuery[] = []
const timed = (query: CompiledQuery, millis: number) => void queries.push([queryOperation(query), millis / 1000])
const db = new Kysely<Tables>({
  dialect: new SqliteDialect({ database: statements }),
  log: (event) => timed(event.query, event.queryDurationMillis),
})

type Run = (tx: unknown, ...args: unknown[]) => Promise<unknown>

/** At most this many writes share a commit: bounds how long the first of them waits for it. */
const MAX_TOGETHER = 64

/** A transaction's PreparedQuery statements, run and timed here (runsDirectly). */
function runTimed(query: CompiledQuery): unknown[] {
  const started = performance.now()
  const { rows } = runStatement(query.sql, query.parameters as unknown[])
  timed(query, performance.now() - started)
  return rows
}

function runStatement(sql: string, parameters: unknown[]) {
  const statement = statements.prepare(sql)
  if (statement.reader) return { rows: statement.all(parameters) }
  const { changes, lastInsertRowid } = statement.run(parameters)
  return { rows: [], changes: Number(changes), lastInsertRowid: Number(lastInsertRowid) }
}

/**
 * The writes that arrived together share one transaction and one commit (its fsync is most of a write's cost), each in
 * a savepoint of its own: one that fails is rolled back alone and answered with its own error, and every other is
 * answered only once the commit is durable. A failed commit (a full disk) fails them all, as it would each alone.
 * better-sqlite3 answers synchronously: each runs from start to end before the next.
 */
async function writeTogether(requests: WriterRequest[]): Promise<Array<Settled<unknown>>> {
  const outcomes: Array<Settled<unknown>> = []
  for (let first = 0; first < requests.length; first += MAX_TOGETHER) {
    outcomes.push(...(await commitTogether(requests.slice(first, first + MAX_TOGETHER))))
  }
  return outcomes
}

// Run on the connection itself, not through Kysely, whose savepoints build a transaction object each time: that took
// more of the writer than the statements of a PATCH (docs/benchmarks.md, "The night of 2026-11-27").
const savepoint = statements.prepare('savepoint write')
const rollbackToSavepoint = statements.prepare('rollback to write')
const releaseSavepoint = statements.prepare('release write')

async function commitTogether(group: WriterRequest[]): Promise<Array<Settled<unknown>>> {
  const trx = await db.startTransaction().execute()
  runsDirectly(trx, runTimed)
  try {
    const done: Array<Settled<unknown>> = []
    for (const request of group) {
      savepoint.run([])
      try {
        done.push({ ok: true, value: await writeIn(trx, request) })
      } catch (error) {
        done.push({ ok: false, error })
        rollbackToSavepoint.run([])
      }
      releaseSavepoint.run([])
    }
    await trx.commit().execute()
    return done
  } catch (error) {
    // SQLite may have rolled the transaction back itself (SQLITE_FULL, IOERR): its ROLLBACK then does nothing
    // (withStatementCache), and Kysely lets go of the connection.
    await trx.rollback().execute()
    return group.map(() => ({ ok: false, error }))
  }
}

async function writeIn(tx: ControlledTransaction<Tables>, request: WriterRequest): Promise<unknown> {
  if (request.type === 'run') return runStatement(request.sql, request.parameters as unknown[])
  const run = writeTransactions[request.name as WriteTransactionName] as Run
  queries = []
  const result = await run(tx, ...(request.args as unknown[]))
  return { result, queries } satisfies TransactAnswer
}

serveRequests(
  parentPort,
  (requests: WriterRequest[]) => writeTogether(requests),
  () => db.destroy(),
)
