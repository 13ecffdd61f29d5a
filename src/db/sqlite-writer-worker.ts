/** The SQLite writer thread: every write of a SQLite file runs on its connection, a whole transaction at a time. */
import { parentPort, workerData } from 'node:worker_threads'
import { Kysely, SqliteDialect } from 'kysely'
import { serveRequests } from '../start-worker.js'
import { openSqliteConnection } from './sqlite-connection.js'
import { withStatementCache } from './sqlite-statements.js'
import type { Tables } from './tables.js'
import type { WriterRequest } from './sqlite-writer-thread.js'
import { writeTransactions, type WriteTransactionName } from './write-transactions.js'

if (!parentPort) throw new Error('sqlite-writer-worker runs as a worker thread')
const statements = withStatementCache(openSqliteConnection((workerData as { path: string }).path))
const db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: statements }) })

type Run = (tx: unknown, ...args: unknown[]) => Promise<unknown>

// better-sqlite3 answers synchronously: a transaction's awaits are microtasks, and it runs from start to end in turn.
serveRequests(
  parentPort,
  (request: WriterRequest) => {
    if (request.type === 'transact') {
      const run = writeTransactions[request.name as WriteTransactionName] as Run
      const args = request.args as unknown[]
      return db.transaction().execute((tx) => run(tx, ...args))
    }
    const statement = statements.prepare(request.sql)
    const parameters = request.parameters as unknown[]
    if (statement.reader) return { rows: statement.all(parameters) }
    const { changes, lastInsertRowid } = statement.run(parameters)
    return { rows: [], changes: Number(changes), lastInsertRowid: Number(lastInsertRowid) }
  },
  () => db.destroy(),
)
