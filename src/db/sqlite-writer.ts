import {
  CompiledQuery,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type QueryResult,
} from 'kysely'
import { SqliteWriterThread } from './sqlite-writer-thread.js'

/**
 * A SQLite file's write connection, on a worker thread: better-sqlite3 is synchronous, and on the event loop each
 * commit's fsync, a WAL checkpoint or a wait for another process's write lock stops every other request.
 * One connection: transactions take turns, as in Kysely's own SQLite driver.
 */
class SqliteWriterDriver implements Driver {
  readonly #thread: SqliteWriterThread
  readonly #connection: DatabaseConnection
  #turn: Promise<void> = Promise.resolve()
  #release?: () => void
  /** A transaction has begun here but not yet on the thread: its BEGIN goes with its first statement. */
  #beginPending = false

  constructor(path: string) {
    this.#thread = new SqliteWriterThread(path)
    const run = (query: CompiledQuery): Promise<QueryResult<unknown>> => {
      const begin = this.#beginPending
      this.#beginPending = false
      return this.#thread.run(query.sql, query.parameters, begin)
    }
    this.#connection = {
      // Rows come back as the statement's; Kysely gives them the query's row type.
      executeQuery: run as DatabaseConnection['executeQuery'],
      // eslint-disable-next-line require-yield -- the service never streams
      streamQuery: async function* () {
        throw new Error('the SQLite writer does not stream')
      },
    }
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.#turn
    let release!: () => void
    this.#turn = new Promise((resolve) => (release = resolve))
    await previous
    this.#release = release
    return this.#connection
  }

  async releaseConnection(): Promise<void> {
    this.#release?.()
  }

  // The BEGIN crosses to the thread with the transaction's first statement: one round trip fewer per transaction.
  async beginTransaction(): Promise<void> {
    this.#beginPending = true
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#beginPending) this.#beginPending = false
    else await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#beginPending) this.#beginPending = false
    else await connection.executeQuery(CompiledQuery.raw('rollback'))
  }

  destroy(): Promise<void> {
    return this.#thread.close()
  }
}

export function sqliteWriterDialect(path: string): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new SqliteWriterDriver(path),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  }
}
