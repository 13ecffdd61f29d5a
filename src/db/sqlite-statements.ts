import type SQLite from 'better-sqlite3'
import type { SqliteDatabase, SqliteStatement } from 'kysely'

// Without pg: the SQLite writer thread loads this module.

/** Distinct SQL texts kept prepared: more than the service issues. */
const STATEMENT_CACHE_SIZE = 256

/**
 * Kysely's SQLite driver prepares every statement on every execution; this reuses one per SQL text. Safe because
 * better-sqlite3 runs a statement to completion synchronously (we never stream, which would hold one open).
 */
export function withStatementCache(sqlite: SQLite.Database): SqliteDatabase & { prepare(text: string): SqliteStatement } {
  const statements = new Map<string, SqliteStatement>()
  // On SQLITE_FULL, IOERR, BUSY or NOMEM SQLite may roll the transaction back itself; Kysely's ROLLBACK would then
  // fail with "no transaction is active" and hide the real error (a full disk must answer 503, not 500).
  const rollback = sqlite.prepare('rollback')
  const rollbackIfOpen: SqliteStatement = {
    reader: false,
    all: () => [],
    iterate: () => [][Symbol.iterator](),
    run: () => (sqlite.inTransaction ? rollback.run() : { changes: 0, lastInsertRowid: 0 }),
  }
  return {
    close: () => sqlite.close(),
    prepare(text) {
      if (text === 'rollback') return rollbackIfOpen
      // A DEFERRED transaction that reads, then writes, after another process's commit fails with SQLITE_BUSY
      // at once instead of waiting. IMMEDIATE takes the write lock up front.
      if (text === 'begin') text = 'begin immediate'
      let statement = statements.get(text)
      if (!statement) {
        statement = sqlite.prepare(text)
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value as string)
        statements.set(text, statement)
      }
      return statement
    },
  }
}
