import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type DatabaseConnection,
  type Driver,
  type KyselyConfig,
  type QueryResult,
} from 'kysely'
import { SqliteWriterThread } from './sqlite-writer-thread.js'
import type { QueryOperation } from './query-operation.js'
import type { Tables } from './tables.js'
import type { WriteTransaction } from './write-transaction.js'

/**
 * Single statements on the writer thread, each its own transaction. Transactions go to the thread whole
 * (SqliteWriter.transact): here one would hold SQLite's only write lock across a message each way per statement,
 * and those messages wait their turn on a busy event loop.
 */
class SqliteWriterDriver implements Driver {
  readonly #connection: DatabaseConnection

  constructor(thread: SqliteWriterThread) {
    this.#connection = {
      executeQuery: async (query: CompiledQuery): Promise<QueryResult<never>> => {
        const { rows, changes, lastInsertRowid } = await thread.run(query.sql, query.parameters)
        return {
          rows: rows as never[],
          numAffectedRows: changes === undefined ? undefined : BigInt(changes),
          insertId: lastInsertRowid === undefined ? undefined : BigInt(lastInsertRowid),
        }
      },
      // eslint-disable-next-line require-yield -- the service never streams
      streamQuery: async function* () {
        throw new Error('the SQLite writer does not stream')
      },
    }
  }

  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    return this.#connection
  }
  async releaseConnection(): Promise<void> {}
  beginTransaction(): Promise<void> {
    return Promise.reject(new Error('a SQLite write transaction runs whole on the writer thread: database.transact(…)'))
  }
  commitTransaction(): Promise<void> {
    return this.beginTransaction()
  }
  rollbackTransaction(): Promise<void> {
    return this.beginTransaction()
  }
  async destroy(): Promise<void> {}
}

/** A SQLite file's writes, on a worker thread: better-sqlite3 is synchronous, and a commit's fsync would stop the event loop. */
export class SqliteWriter {
  readonly #thread: SqliteWriterThread
  readonly kysely: Kysely<Tables>
  #names?: Promise<Map<unknown, string>>

  constructor(
    path: string,
    log: KyselyConfig['log'],
    /** Told each query a transaction ran on the thread (the thread's own statements are timed there). */
    private readonly observe?: (operation: QueryOperation, seconds: number) => void,
  ) {
    const thread = (this.#thread = new SqliteWriterThread(path))
    this.kysely = new Kysely<Tables>({
      dialect: {
        createAdapter: () => new SqliteAdapter(),
        createDriver: () => new SqliteWriterDriver(thread),
        createIntrospector: (db) => new SqliteIntrospector(db),
        createQueryCompiler: () => new SqliteQueryCompiler(),
      },
      log,
    })
  }

  /** Runs `fn` whole on the thread, which finds it by its name in write-transactions.ts. */
  async transact<A extends unknown[], R>(fn: WriteTransaction<A, R>, ...args: A): Promise<R> {
    // Loaded on first use: that module imports every module with a write transaction.
    this.#names ??= import('./write-transactions.js').then(({ writeTransactions }) => new Map(Object.entries(writeTransactions).map(([name, f]) => [f, name])))
    const name = (await this.#names).get(fn)
    if (name === undefined) throw new Error(`${fn.name} is not in write-transactions.ts: the SQLite writer thread cannot run it`)
    const { result, queries } = await this.#thread.transact(name, args)
    if (this.observe) for (const [operation, seconds] of queries) this.observe(operation, seconds)
    return result as R
  }

  close(): Promise<void> {
    return this.#thread.close()
  }
}
