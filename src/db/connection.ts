import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import type { Tables } from './tables.js'

export type DialectName = 'sqlite' | 'postgres'

export interface Database {
  readonly kysely: Kysely<Tables>
  readonly dialect: DialectName
  close(): Promise<void>
}

type Target = { dialect: 'sqlite'; path: string } | { dialect: 'postgres'; url: string }

/** `sqlite:<path>`, `sqlite::memory:`, `postgres://…`, `postgresql://…` (contract §2). */
export function parseDatabaseUrl(url: string): Target {
  if (url === 'sqlite::memory:') return { dialect: 'sqlite', path: ':memory:' }
  if (url.startsWith('sqlite:') && url.length > 'sqlite:'.length) {
    return { dialect: 'sqlite', path: url.slice('sqlite:'.length) }
  }
  if (/^postgres(ql)?:\/\/./.test(url)) return { dialect: 'postgres', url }
  throw new Error('DATABASE_URL must be sqlite:<path>, sqlite::memory:, postgres://… or postgresql://…')
}

// BIGINT columns hold millisecond times, counts and thousandths: all far below 2^53, so numbers are exact.
const pgTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === pg.types.builtins.INT8) return Number
    return pg.types.getTypeParser(oid, format)
  },
}

export interface OpenOptions {
  /** Called for errors on idle PostgreSQL connections, which would otherwise crash the process. */
  onPoolError?: (error: Error) => void
}

/** The one place that chooses a dialect. */
export function openDatabase(url: string, options: OpenOptions = {}): Database {
  const target = parseDatabaseUrl(url)
  switch (target.dialect) {
    case 'sqlite': {
      if (target.path !== ':memory:') mkdirSync(dirname(target.path), { recursive: true })
      const sqlite = new SQLite(target.path)
      // WAL + synchronous=FULL: an acknowledged commit survives power loss (contract §9).
      sqlite.pragma('journal_mode = WAL')
      sqlite.pragma('synchronous = FULL')
      sqlite.pragma('foreign_keys = ON')
      // Another process (a second instance, the CLI) may hold the write lock briefly: wait, don't fail.
      sqlite.pragma('busy_timeout = 5000')
      const kysely = new Kysely<Tables>({ dialect: new SqliteDialect({ database: sqlite }) })
      return { kysely, dialect: 'sqlite', close: () => kysely.destroy() }
    }
    case 'postgres': {
      const pool = new pg.Pool({
        connectionString: target.url,
        max: 10,
        types: pgTypes,
        // A database that does not answer must fail the request, not hang it.
        connectionTimeoutMillis: 5000,
      })
      pool.on('error', (error) => options.onPoolError?.(error))
      const kysely = new Kysely<Tables>({ dialect: new PostgresDialect({ pool }) })
      return { kysely, dialect: 'postgres', close: () => kysely.destroy() }
    }
  }
}
