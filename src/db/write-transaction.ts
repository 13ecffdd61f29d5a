import type { Tx } from './connection.js'

/**
 * A write transaction: a function of a transaction and plain data (structured-cloneable both ways), with no I/O but
 * its statements, so that it can run whole where the write lock lives (docs/design/0015-writes-where-the-lock-lives.md).
 */
export type WriteTransaction<A extends unknown[], R> = (tx: Tx, ...args: A) => Promise<R>

/** Runs a write transaction where the write lock lives (Database.transact). */
export type Transact = <A extends unknown[], R>(fn: WriteTransaction<A, R>, ...args: A) => Promise<R>

const ONE_STATEMENT = new WeakSet()

/**
 * Marks a write transaction that runs a single statement on PostgreSQL: there it runs on its own, committed as it
 * ends, with no BEGIN and no COMMIT sent after it. The rows it locks are then held for that statement alone, never
 * across a round trip to the service (and, behind PgBouncer, to the pooler) for the COMMIT. A single statement is
 * atomic by itself, so nothing else changes. On SQLite it runs as any other (the writer thread, whole).
 */
export function oneStatementOnPostgres<A extends unknown[], R>(fn: WriteTransaction<A, R>): WriteTransaction<A, R> {
  ONE_STATEMENT.add(fn)
  return fn
}

export const isOneStatementOnPostgres = (fn: object): boolean => ONE_STATEMENT.has(fn)
