import { siblingModule, ThreadRequests } from '../start-worker.js'
import type { QueryOperation } from './query-operation.js'

export type WriterRequest = { type: 'run'; sql: string; parameters: readonly unknown[] } | { type: 'transact'; name: string; args: readonly unknown[] }

/** A query the thread ran, and how long it took in seconds. */
export type TimedQuery = [QueryOperation, number]

/** A whole transaction's answer: its result, and its queries for the service's metrics. */
export interface TransactAnswer {
  result: unknown
  queries: TimedQuery[]
}

/** A single statement's answer from the thread. */
export interface StatementResult {
  rows: unknown[]
  changes?: number
  lastInsertRowid?: number
}

/** The writer thread (sqlite-writer-worker.ts): single statements, and whole transactions by name. */
export class SqliteWriterThread {
  readonly #thread: ThreadRequests<WriterRequest>

  constructor(path: string) {
    this.#thread = new ThreadRequests(siblingModule(import.meta.url, 'sqlite-writer-worker'), { path })
  }

  /** One statement, its own transaction. */
  run(sql: string, parameters: readonly unknown[]): Promise<StatementResult> {
    return this.#thread.ask({ type: 'run', sql, parameters }) as Promise<StatementResult>
  }

  /** A write transaction of write-transactions.ts by its name, run whole on the thread. */
  transact(name: string, args: readonly unknown[]): Promise<TransactAnswer> {
    return this.#thread.ask({ type: 'transact', name, args }) as Promise<TransactAnswer>
  }

  close(): Promise<void> {
    return this.#thread.close()
  }
}
