import { PostgresAdapter, sql, type Kysely } from 'kysely'
import type { DialectName } from './connection.js'

/** The few places where SQLite and PostgreSQL need different SQL; each says why. */

/**
 * Opens a transaction that no other process can run at the same time (used by migrations, so two instances
 * starting together are safe), without the request-time statement timeout. PostgreSQL: a transaction-scoped
 * advisory lock. SQLite: BEGIN IMMEDIATE takes the database's single write lock up front (a deferred BEGIN
 * would fail instead of waiting).
 */
export async function beginExclusive<DB>(dialect: DialectName, conn: Kysely<DB>): Promise<void> {
  if (dialect === 'postgres') {
    await sql`begin`.execute(conn)
    // Requests are bounded by statement_timeout (connection.ts); a migration (DDL on big tables, or waiting
    // for another instance's migration below) may rightly take longer. Local: ends with this transaction.
    await sql`set local statement_timeout = 0`.execute(conn)
    // The key is arbitrary but fixed: it names "the listing-service migration lock".
    await sql`select pg_advisory_xact_lock(7305196381042)`.execute(conn)
  } else {
    await sql`begin immediate`.execute(conn)
  }
}

/**
 * Whether `db` (a Kysely instance or transaction) runs on PostgreSQL. Writes ask it for row locks only:
 * PostgreSQL locks rows FOR UPDATE (SKIP LOCKED for the sweepers), so two instances changing one row take turns;
 * a SQLite write transaction already holds the database's only write lock (BEGIN IMMEDIATE, connection.ts).
 */
export const onPostgres = (db: { getExecutor(): { readonly adapter: unknown } }): boolean => db.getExecutor().adapter instanceof PostgresAdapter

/** True for a UNIQUE or PRIMARY KEY violation, in either dialect's words. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}

/**
 * Node's socket errors pg passes on as they are: the server refused, dropped or never answered the
 * connection (EHOSTUNREACH, ENETUNREACH and EAI_AGAIN: the network or DNS path to it is down).
 */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN'])

/**
 * pg's own words when a connection breaks or never comes (plain Errors without a code): the pool's and the
 * client's connect timeouts, a socket closed under a query, a client used after its connection failed, and our
 * query_timeout (connection.ts) firing on a server that went silent.
 */
const PG_UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Query read timeout)/

/**
 * PostgreSQL SQLSTATEs that say "the database cannot serve you now", not "your statement is wrong": class 08
 * connection exception (PgBouncer reports its own failures to reach a server as 08P01 too); 57P01–57P03
 * admin/crash shutdown and cannot-connect-now (starting up, recovering); class 53 insufficient resources (disk
 * full, out of memory, too many connections); 57014 query_canceled, which is what our statement_timeout
 * (connection.ts) raises. And the errors of a server that is read-only or replaying WAL, which a retry (on the
 * primary, or once replay moved on) may well pass: 25006 read_only_sql_transaction (a write reaching a hot
 * standby, or a database set default_transaction_read_only, as during a failover); 40001 serialization_failure
 * and 40P01 deadlock_detected, which the service's read-committed transactions and fixed lock order do not
 * cause on a primary, but a standby raises when it cancels a query in conflict with recovery.
 */
const PG_UNAVAILABLE_SQLSTATE = /^(08...|53...|57P0[123]|57014|25006|40001|40P01)$/

/**
 * better-sqlite3 error codes (extended codes included, e.g. SQLITE_IOERR_WRITE) that mean the file cannot be
 * written or read now: locked by another connection beyond busy_timeout, read-only, disk full, I/O failure,
 * cannot open, or the WAL lock protocol failing. Corruption is not among them (see isDatabaseCorrupt).
 */
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
 * True when `error` means the database is unavailable (down, unreachable, silent past our timeouts, out of
 * disk or connections, locked, read-only) rather than a bug: the request gets 503 `/problems/unavailable`, and
 * a retry later may succeed. Both dialects' codes are checked at once: they cannot be confused (SQLSTATEs are
 * five characters, SQLite's codes start SQLITE_, Node's start E).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return errorAndCauses(error).some(({ code, message }) => {
    if (typeof code === 'string') {
      if (UNREACHABLE_CODES.has(code) || PG_UNAVAILABLE_SQLSTATE.test(code) || SQLITE_UNAVAILABLE_CODE.test(code)) return true
    }
    return typeof message === 'string' && PG_UNAVAILABLE_MESSAGE.test(message)
  })
}

/**
 * True when the database reports damaged data: SQLite's SQLITE_CORRUPT* and SQLITE_NOTADB, PostgreSQL's
 * XX001 data_corrupted and XX002 index_corrupted. These stay 500, not 503: retrying cannot help, and "the
 * database is briefly unavailable" would tell clients to wait for something only an operator can repair.
 */
export function isDatabaseCorrupt(error: unknown): boolean {
  return errorAndCauses(error).some(
    ({ code }) => typeof code === 'string' && (/^SQLITE_(CORRUPT|NOTADB)(_|$)/.test(code) || code === 'XX001' || code === 'XX002'),
  )
}
