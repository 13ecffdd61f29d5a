import type SQLite from 'better-sqlite3'
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
  type Transaction,
} from 'kysely'
import pg from 'pg'
import { isDatabaseUnavailable } from './dialect.js'
import { queryOperation, type QueryOperation } from './query-operation.js'
import { openSqliteConnection } from './sqlite-connection.js'
import { sqliteWriterDialect } from './sqlite-writer.js'
import type { Tables } from './tables.js'

export type DialectName = 'sqlite' | 'postgres'

/**
 * A write transaction: every write of the service is a function taking one (`database.writer.transaction()`).
 * On SQLite it begins IMMEDIATE: it holds the database's write lock from its first statement.
 */
export type Tx = Transaction<Tables>

export interface Database {
  /** For requests: on PostgreSQL every query is bounded in time (STATEMENT_TIMEOUT_MS, QUERY_TIMEOUT_MS). */
  readonly kysely: Kysely<Tables>
  /**
   * The same connections without the client-side query bound, for migrations: DDL on a large table, or waiting
   * for another instance's migration, may rightly take minutes (beginExclusive lifts the server-side one).
   */
  readonly unbounded: Kysely<Tables>
  /**
   * Where write transactions run (`writer.transaction()`). PostgreSQL: the same pool as `kysely`. A SQLite file: a
   * connection of its own on a worker thread (sqlite-writer.ts), so no commit's fsync stops the event loop.
   */
  readonly writer: Kysely<Tables>
  /**
   * For the background jobs (background.ts): `writer`, but on PostgreSQL each statement is planned when it runs,
   * never kept prepared. The queues they read (due deliveries, due expiries) swing from empty to large, and a plan
   * cached while a table was empty stays a scan of all of it until the next ANALYZE.
   */
  readonly background: Kysely<Tables>
  /**
   * PostgreSQL with DATABASE_READ_URL: a hot standby, bounded as `kysely` is. Only reads that check it has replayed
   * what they must see run there (db/read-your-writes.ts); everything else stays on the primary.
   */
  readonly replica?: Kysely<Tables>
  readonly dialect: DialectName
  /** SQLite only: the file (or ':memory:') and the main connection, the one Kysely reads on. */
  readonly sqlite?: {
    path: string
    connection: SQLite.Database
  }
  /** The query observer given to openDatabase, for queries run outside Kysely (the SQLite writer's). */
  readonly observeQuery?: (operation: QueryOperation, seconds: number) => void
  close(): Promise<void>
}

type Target = { dialect: 'sqlite'; path: string } | { dialect: 'postgres'; url: string }

/** `sqlite:<path>`, `sqlite::memory:`, `postgres://…`, `postgresql://…` (docs/operations.md#configuration). */
export function parseDatabaseUrl(url: string): Target {
  if (url === 'sqlite::memory:') return { dialect: 'sqlite', path: ':memory:' }
  if (url.startsWith('sqlite:') && url.length > 'sqlite:'.length) {
    return { dialect: 'sqlite', path: url.slice('sqlite:'.length) }
  }
  if (/^postgres(ql)?:\/\/./.test(url)) return { dialect: 'postgres', url }
  throw new Error('DATABASE_URL must be sqlite:<path>, sqlite::memory:, postgres://… or postgresql://…')
}

// BIGINT columns hold millisecond times, counts and thousandths: all far below 2^53, so numbers are exact.
const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: (oid, format) => (oid === pg.types.builtins.INT8 ? Number : (pg.types.getTypeParser(oid, format) as (text: string) => unknown)),
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
  // On SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY or SQLITE_NOMEM inside a transaction, SQLite may roll the whole
  // transaction back itself (sqlite.org/lang_transaction.html). Kysely's ROLLBACK then failed with "no
  // transaction is active", and that error replaced the real one: a full disk answered 500 instead of 503.
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
      // Kysely begins transactions DEFERRED: a transaction that reads, then writes, after another process's
      // commit would fail with SQLITE_BUSY at once instead of waiting. IMMEDIATE takes the write lock up front.
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

/**
 * Whether a pooled client is connected to a PostgreSQL backend of its own, or to a pooler. PostgreSQL tells a
 * client its backend's process id at connect (BackendKeyData, for cancelling); a pooler in transaction mode
 * (PgBouncer, and any other: it cannot tie a client to one backend) answers with a key of its own, which is not
 * the pid of the backend that then runs the client's statements. One round trip, once per connection.
 */
const ownBackend = new WeakMap<pg.PoolClient, Promise<boolean>>()

function isOwnBackend(client: pg.PoolClient): Promise<boolean> {
  let known = ownBackend.get(client)
  if (!known) {
    const processId = (client as pg.PoolClient & { processID?: number }).processID
    // Bounded like any request query: a silent server must not hold the connect forever.
    const config: pg.QueryConfig & { query_timeout?: number } = { text: 'select pg_backend_pid() as pid', query_timeout: QUERY_TIMEOUT_MS }
    known = client.query<{ pid: number }>(config).then(({ rows }) => processId !== undefined && rows[0]?.pid === processId)
    // A failed check is not kept: the query that follows fails the same way, and the client is dropped.
    known.catch(() => ownBackend.delete(client))
    ownBackend.set(client, known)
  }
  return known
}

/**
 * Kysely sends every query unnamed, so the server parses and plans it on every execution. On a connection of its
 * own, naming each parameterised statement after its SQL text lets the connection prepare it once and reuse it
 * (pg remembers which names a connection has prepared); the page statement's planning was most of what the
 * database spent on a page (docs/design/0009-no-session-state.md). Query shapes are few and fixed, so the
 * statements kept per connection stay bounded. Through a pooler in transaction mode, statements go unnamed: each
 * transaction, and each statement outside one, may run on another server connection, where a name would be
 * missing (26000) or taken by another client (42P05). Nothing else is kept on a connection either (see
 * POSTGRES_ROLE_SETTINGS). Statements without parameters (BEGIN, COMMIT, DDL) go as they are.
 */
/**
 * Statements with more parameters go unnamed: their texts vary with their number of rows or ids (a batch of
 * creates, an expiry sweep's ids), and each name kept is a statement the server holds for the connection's life.
 */
const MAX_NAMED_PARAMETERS = 64

function withStatements(pool: pg.Pool, queryTimeoutMs: number | undefined, { prepare = true } = {}): PostgresPool {
  const names = new Map<string, string>()
  const nameOf = (text: string) => {
    let name = names.get(text)
    if (name === undefined) names.set(text, (name = `q_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`))
    return name
  }
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect()
      // A client whose connection failed without the server saying why is not trusted again: after pg's
      // query_timeout its query is still outstanding on the socket, so the next query would queue behind it.
      // release(error) makes the pool close it; a new connection (which prepares its named statements afresh)
      // takes its place. An error the server reported (a DatabaseError, e.g. statement_timeout's 57014) leaves
      // the connection in a known state, and pg-pool itself drops a client whose connection has ended.
      let broken: Error | undefined
      // pg emits 'error' on a client whose connection ends, even when the query in flight has been rejected
      // with it too. The pool listens only while a client is idle; checked out, nobody did, and a database
      // restart during a query crashed the process. The query's own rejection is what the request sees.
      const onError = (error: Error) => (broken = error)
      client.on('error', onError)
      const release = () => {
        client.removeListener('error', onError)
        client.release(broken)
      }
      let named: boolean
      try {
        named = prepare && (await isOwnBackend(client))
      } catch (error) {
        broken = error as Error
        release()
        throw error
      }
      const run = (text: string, values: unknown[]) => {
        // query_timeout is read per query by pg (client.js) but missing from its typings.
        const config: pg.QueryConfig & { query_timeout?: number } = {
          name: named && values.length > 0 && values.length <= MAX_NAMED_PARAMETERS ? nameOf(text) : undefined,
          text,
          values,
          query_timeout: queryTimeoutMs,
        }
        return client.query(config).catch((error: unknown) => {
          if (isDatabaseUnavailable(error) && !(error instanceof pg.DatabaseError)) broken = error as Error
          throw error
        })
      }
      return {
        // Only the (sql, parameters) form: the cursor form serves streaming, which the service never uses.
        query: run as unknown as PostgresPoolClient['query'],
        release,
      }
    },
    end: () => pool.end(),
  }
}

/**
 * PostgreSQL time bounds, so a database that is down or silent ends a request as 503 in bounded time (contract
 * docs/operations.md#when-the-database-is-unavailable) instead of hanging it. Every query a request makes is an
 * index lookup or one insert statement taking milliseconds (a 100-item create included), so 5 s is far beyond
 * any legitimate one yet short enough to answer a client before its own timeout. Migrations are exempt
 * (Database.unbounded, beginExclusive).
 */
const CONNECT_TIMEOUT_MS = 5000
/**
 * Server side: the server cancels the statement (57014), freeing its locks; the connection stays usable. Not
 * sent by this client (PgBouncer refuses it in the startup packet, and a SET would stay on a pooled server
 * connection): it is the default of the service's role in its database, which `migrate` sets
 * (POSTGRES_ROLE_SETTINGS), so every session gets it, through a pooler or not, transactions or single statements.
 */
export const STATEMENT_TIMEOUT_MS = 5000
/**
 * Client side, for a server that accepts but never answers (the statement timeout cannot fire there): 2 s
 * after the server's own timeout, so a slow but living server reports 57014 first, keeping its connection.
 */
const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 2000

/**
 * The settings every session of the service needs, kept as the defaults of the service's role in its database
 * (`ALTER ROLE current_user IN DATABASE … SET`, by migrate(), which any role may do for itself) rather than sent
 * per connection: see docs/design/0009-no-session-state.md.
 * - statement_timeout: above.
 * - jit off: the service's statements are short, and JIT compiles any whose estimated cost passes
 *   jit_above_cost; discovery's candidate statement did at 1M listings, compiling for far longer than it ran
 *   (docs/benchmarks.md).
 */
export const POSTGRES_ROLE_SETTINGS: Readonly<Record<string, string>> = {
  statement_timeout: String(STATEMENT_TIMEOUT_MS),
  jit: 'off',
}

export interface OpenOptions {
  /** DATABASE_READ_URL: a standby of the PostgreSQL server `url` names (config.ts refuses it with SQLite). */
  readUrl?: string
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

function postgresPool(url: string, options: OpenOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    types: pgTypes,
    // A database that does not answer must fail the request, not hang it. This also bounds the wait for a
    // free client when all are busy. Nothing else is sent at connect (see POSTGRES_ROLE_SETTINGS).
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  })
  pool.on('error', (error) => options.onPoolError?.(error))
  return pool
}

/** A standby's own pool, with the primary's bounds; named statements too when it is a backend of our own. */
function openReplica(url: string, options: OpenOptions, log: KyselyConfig['log']): Kysely<Tables> {
  const target = parseDatabaseUrl(url)
  if (target.dialect !== 'postgres') throw new Error('DATABASE_READ_URL must be postgres://… or postgresql://…')
  return new Kysely<Tables>({ dialect: new PostgresDialect({ pool: withStatements(postgresPool(target.url, options), QUERY_TIMEOUT_MS) }), log })
}

/** The one place that chooses a dialect. */
export function openDatabase(url: string, options: OpenOptions = {}): Database {
  const target = parseDatabaseUrl(url)
  const log = queryLog(options.observeQuery)
  const { observeQuery } = options
  switch (target.dialect) {
    case 'sqlite': {
      if (options.readUrl !== undefined) throw new Error('DATABASE_READ_URL needs a PostgreSQL DATABASE_URL: SQLite has no standby to read from')
      const sqlite = openSqliteConnection(target.path)
      const kysely = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }), log })
      // No query timeout to lift: better-sqlite3 runs each statement synchronously to its end.
      // An in-memory database exists on this connection only: it is written here too.
      const writer = target.path === ':memory:' ? kysely : new Kysely<Tables>({ dialect: sqliteWriterDialect(target.path), log })
      return {
        kysely,
        unbounded: kysely,
        writer,
        background: writer,
        dialect: 'sqlite',
        sqlite: { path: target.path, connection: sqlite },
        observeQuery,
        close: async () => {
          if (writer !== kysely) await writer.destroy()
          await kysely.destroy()
        },
      }
    }
    case 'postgres': {
      const pool = postgresPool(target.url, options)
      const kysely = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: withStatements(pool, QUERY_TIMEOUT_MS) }), log })
      // Shares the pool; only `kysely` ends it on close.
      const unbounded = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: withStatements(pool, undefined) }), log })
      const background = new Kysely<Tables>({ dialect: new PostgresDialect({ pool: withStatements(pool, QUERY_TIMEOUT_MS, { prepare: false }) }), log })
      const replica = options.readUrl === undefined ? undefined : openReplica(options.readUrl, options, log)
      return {
        kysely,
        unbounded,
        writer: kysely,
        background,
        replica,
        dialect: 'postgres',
        observeQuery,
        close: async () => {
          await Promise.all([kysely.destroy(), replica?.destroy()])
        },
      }
    }
  }
}
