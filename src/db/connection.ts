import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'
import { createHash } from 'node:crypto'
import {
  Kysely,
  PostgresDialect,
  type KyselyConfig,
  SqliteDialect,
  type PostgresPool,
  type PostgresPoolClient,
  type SqliteDatabase,
  type SqliteStatement,
} from 'kysely'
import pg from 'pg'
import { queryOperation, type QueryOperation } from './query-operation.js'
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

/**
 * Distinct SQL texts kept prepared. The service issues about 150 at most: the fixed ones, one items insert per
 * item count (1–100) and one IN list per length of the rolling-deploy fallback (1–50).
 */
const STATEMENT_CACHE_SIZE = 256

/**
 * Kysely's SQLite driver prepares every statement on every execution; on a page request that was 14% of the
 * CPU. Handing it this wrapper instead reuses the prepared statement for SQL text seen before. Safe because
 * better-sqlite3 runs a statement to completion synchronously (we never stream, which would hold one open).
 */
function withStatementCache(sqlite: SQLite.Database): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>()
  return {
    close: () => sqlite.close(),
    prepare(text) {
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

/**
 * Kysely sends every PostgreSQL query unnamed, so the server parses and plans it on every execution; on a page
 * request that planning took the CPU the server shares with us. Naming each parameterised statement after its
 * SQL text lets each connection prepare it once and reuse it (pg remembers which names a connection has
 * prepared). Query shapes are few and fixed (the create is one statement for any item count; only the
 * rolling-deploy fallback's IN list varies, 1–50), so the statements kept per connection stay bounded.
 * Statements without parameters (BEGIN, COMMIT, DDL) go as they are.
 */
function withNamedStatements(pool: pg.Pool): PostgresPool {
  const names = new Map<string, string>()
  const nameOf = (text: string) => {
    let name = names.get(text)
    if (name === undefined) names.set(text, (name = `q_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`))
    return name
  }
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect()
      return {
        // Only the (sql, parameters) form: the cursor form serves streaming, which the service never uses.
        query: ((text: string, values: unknown[]) =>
          values.length === 0
            ? client.query(text, values)
            : client.query({ name: nameOf(text), text, values })) as unknown as PostgresPoolClient['query'],
        release: () => client.release(),
      }
    },
    end: () => pool.end(),
  }
}

export interface OpenOptions {
  /** Called for errors on idle PostgreSQL connections, which would otherwise crash the process. */
  onPoolError?: (error: Error) => void
  /** Told the operation and duration of every query, failed ones included (the /metrics histogram). */
  observeQuery?: (operation: QueryOperation, seconds: number) => void
}

/**
 * Kysely's log hook sees every query run on a connection it hands out: the query builder, `sql` templates,
 * PreparedQuery's executeQuery, transactions and migrations alike. Without an observer, no hook, no cost.
 */
function queryLog(observe: OpenOptions['observeQuery']): KyselyConfig['log'] {
  if (!observe) return undefined
  return (event) => observe(queryOperation(event.query), event.queryDurationMillis / 1000)
}

/** The one place that chooses a dialect. */
export function openDatabase(url: string, options: OpenOptions = {}): Database {
  const target = parseDatabaseUrl(url)
  const log = queryLog(options.observeQuery)
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
      const kysely = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }), log })
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
      const kysely = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: withNamedStatements(pool) }), log })
      return { kysely, dialect: 'postgres', close: () => kysely.destroy() }
    }
  }
}
