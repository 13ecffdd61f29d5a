import { PostgresAdapter, sql, type Kysely, type RawBuilder } from 'kysely'
import type { DialectName, Tx } from './connection.js'

/**
 * A transaction no other process runs at the same time (migrations: instances starting together), without the
 * request statement timeout. SQLite: BEGIN IMMEDIATE, as a deferred BEGIN would fail instead of waiting.
 */
export async function beginExclusive<DB>(dialect: DialectName, conn: Kysely<DB>): Promise<void> {
  if (dialect === 'postgres') {
    await sql`begin`.execute(conn)
    // A migration may rightly outlast a request's bound, waiting for the lock below included.
    await sql`set local statement_timeout = 0`.execute(conn)
    // Arbitrary but fixed: the listing-service migration lock.
    await sql`select pg_advisory_xact_lock(7305196381042)`.execute(conn)
  } else {
    await sql`begin immediate`.execute(conn)
  }
}

/** A Kysely or a transaction of one: what tells the dialect. */
type OnDatabase = { getExecutor(): { readonly adapter: unknown } }

/**
 * Writes ask it for row locks only: on PostgreSQL two instances changing one row take turns by FOR UPDATE; a
 * SQLite write transaction already holds the database's only write lock.
 */
export const onPostgres = (db: OnDatabase): boolean => db.getExecutor().adapter instanceof PostgresAdapter

/**
 * An owner's id (a provider's or a marketplace's) in a read of its rows, as PostgreSQL should plan for it: hidden
 * from the planner, which then plans for an owner of average size, as a prepared statement's generic plan does.
 * Planned for the id itself, an owner that has grown since the last ANALYZE (a new provider's first thousands of
 * creates: autoanalyze waits for a tenth of the table to change) counts as nearly empty, every index that begins with
 * the owner's column looks equally cheap, and the smallest one is taken: a create's referenceId check then read every
 * listing of its provider. Unnamed statements (all of them through a pooler in transaction mode) are planned for
 * their values every time. SQLite: the value itself.
 */
export const ownerKey = (db: OnDatabase, id: string): string | RawBuilder<string> => (onPostgres(db) ? sql<string>`(select cast(${id} as text))` : id)

/**
 * The transaction's commit gives its locks back without waiting for the WAL flush: for one whose writes a crash may
 * lose (a row lock, derived state the next write makes again). SQLite's one writer has no such wait to skip.
 */
export async function commitWithoutFlush(tx: Tx): Promise<void> {
  if (onPostgres(tx)) await sql`set local synchronous_commit = off`.execute(tx)
}

/** True for a UNIQUE or PRIMARY KEY violation, in either dialect's words. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

/** Node's socket errors, which pg passes on: the server, or the network or DNS path to it, is down. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'])

/** pg's own words (Errors without a code) when a connection breaks, never comes, or our query_timeout fires. */
const PG_UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Query read timeout)/

/**
 * SQLSTATEs that say "the database cannot serve you now", not "your statement is wrong": class 08 (PgBouncer's
 * own failures to reach a server too); 57P01–57P03 shutdown or not accepting connections yet; class 53
 * insufficient resources; 57014, our statement_timeout. And those of a read-only or replaying server, which a
 * retry may pass: 25006 (a hot standby, or a failover under way); 40001 and 40P01, which our read-committed
 * transactions and fixed lock order do not cause on a primary, but a standby raises on a recovery conflict.
 */
const PG_UNAVAILABLE_SQLSTATE = /^(08...|53...|57P0[123]|57014|25006|40001|40P01)$/

/** SQLite codes, extended ones included, meaning the file cannot be used now. Corruption is not one (isDatabaseCorrupt). */
const SQLITE_UNAVAILABLE_CODE = /^SQLITE_(BUSY|LOCKED|READONLY|IOERR|CANTOPEN)(_|$)|^SQLITE_(FULL|PROTOCOL)$/

/** The error and what it wraps: `cause`, and the members of an AggregateError (Node's multi-address connect). */
function errorAndCauses(error: unknown): Array<{ code?: unknown; message?: unknown }> {
  const found: Array<{ code?: unknown; message?: unknown }> = []
  const visit = (value: unknown, depth: number) => {
    if (value === null || typeof value !== 'object' || depth > 3) return
    found.push(value)
    visit((value as { cause?: unknown }).cause, depth + 1)
    const members = (value as { errors?: unknown }).errors
    if (Array.isArray(members)) for (const member of members) visit(member, depth + 1)
  }
  visit(error, 0)
  return found
}

/**
 * The database is unavailable rather than the code wrong: 503, and a retry may succeed. Both dialects' codes are
 * checked at once; they cannot be confused (SQLSTATEs are five characters, SQLite's start SQLITE_, Node's E).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return errorAndCauses(error).some(({ code, message }) => {
    if (typeof code === 'string') {
      if (UNREACHABLE_CODES.has(code) || PG_UNAVAILABLE_SQLSTATE.test(code) || SQLITE_UNAVAILABLE_CODE.test(code)) return true
    }
    return typeof message === 'string' && PG_UNAVAILABLE_MESSAGE.test(message)
  })
}

/** Damaged data: stays 500, not 503, as a retry cannot help and only an operator can repair it. */
export function isDatabaseCorrupt(error: unknown): boolean {
  return errorAndCauses(error).some(
    ({ code }) => typeof code === 'string' && (/^SQLITE_(CORRUPT|NOTADB)(_|$)/.test(code) || code === 'XX001' || code === 'XX002'),
  )
}
