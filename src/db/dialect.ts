import { sql, type Expression, type Kysely, type RawBuilder } from 'kysely'
import type { DialectName } from './connection.js'

/** The few places where SQLite and PostgreSQL need different SQL; each says why. */

/** Larger of two values: PostgreSQL has GREATEST; SQLite's two-argument max() is the scalar equivalent. */
export function greatest(dialect: DialectName, a: Expression<number>, b: Expression<number>): RawBuilder<number> {
  return dialect === 'postgres' ? sql<number>`greatest(${a}, ${b})` : sql<number>`max(${a}, ${b})`
}

/**
 * Opens a transaction that no other process can run at the same time (used by migrations, so two instances
 * starting together are safe). PostgreSQL: a transaction-scoped advisory lock. SQLite: BEGIN IMMEDIATE takes
 * the database's single write lock up front (a deferred BEGIN would fail instead of waiting).
 */
export async function beginExclusive(dialect: DialectName, conn: Kysely<any>): Promise<void> {
  if (dialect === 'postgres') {
    await sql`begin`.execute(conn)
    // The key is arbitrary but fixed: it names "the listing-service migration lock".
    await sql`select pg_advisory_xact_lock(7305196381042)`.execute(conn)
  } else {
    await sql`begin immediate`.execute(conn)
  }
}

/** True for a UNIQUE or PRIMARY KEY violation, in either dialect's words. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
}
