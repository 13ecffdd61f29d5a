import type { Tx } from './connection.js'

/**
 * A write transaction: a function of a transaction and plain data (structured-cloneable both ways), with no I/O but
 * its statements, so that it can run whole where the write lock lives (docs/design/0015-writes-where-the-lock-lives.md).
 */
export type WriteTransaction<A extends unknown[], R> = (tx: Tx, ...args: A) => Promise<R>

/** Runs a write transaction where the write lock lives (Database.transact). */
export type Transact = <A extends unknown[], R>(fn: WriteTransaction<A, R>, ...args: A) => Promise<R>
