import type SQLite from 'better-sqlite3'
import { createHash } from 'node:crypto'
import { Kysely, PostgresDialect, type KyselyConfig, SqliteDialect, type PostgresPool, type PostgresPoolClient, type Transaction } from 'kysely'
import pg from 'pg'
import { isDatabaseUnavailable, onPostgres } from './dialect.js'
import { queryOperation, type QueryOperation } from './query-operation.js'
import { openSqliteConnection } from './sqlite-connection.js'
import { withStatementCache } from './sqlite-statements.js'
import { SqliteWriter } from './sqlite-writer.js'
import type { Tables } from './tables.js'
import { isOneStatementOnPostgres, type Transact } from './write-transaction.js'

export type DialectName = 'sqlite' | 'postgres'

/** A write transaction (`database.writer.transaction()`); on SQLite it holds the write lock from its first statement. */
export type Tx = Transaction<Tables>

export interface Database {
  /** For requests: on PostgreSQL every query is bounded in time. */
  readonly kysely: Kysely<Tables>
  /** Without the client-side query bound, for migrations: DDL on a large table may rightly take minutes. */
  readonly unbounded: Kysely<Tables>
  /** For single write statements. A SQLite file: its own connection on a worker thread, so no fsync stops the event loop. */
  readonly writer: Kysely<Tables>
  /**
   * Runs a write transaction where the write lock lives: on a SQLite file's writer thread, whole, with no message
   * between its statements; on PostgreSQL, on a pooled connection.
   */
  readonly transact: Transact
  /**
   * For the background jobs: `writer` and `transact`, but on PostgreSQL never prepared. Their queues swing from empty
   * to large, and a plan cached while a table was empty stays a full scan until the next ANALYZE.
   */
  readonly background: Kysely<Tables>
  readonly transactBackground: Transact
  /** A hot standby (DATABASE_READ_URL): only reads that check it has replayed what they must see run there. */
  readonly replica?: Kysely<Tables>
  readonly dialect: DialectName
  /** SQLite only: the connection Kysely reads on. */
  readonly sqlite?: { connection: SQLite.Database; path: string }
  close(): Promise<void>
}

/** What a background job reads and writes with: database.background and its transactBackground. */
export interface JobDatabase {
  readonly db: Kysely<Tables>
  readonly transact: Transact
}

export const jobDatabase = (database: Database): JobDatabase => ({ db: database.background, transact: database.transactBackground })

type Target = { dialect: 'sqlite'; path: string } | { dialect: 'postgres'; url: string }

export function parseDatabaseUrl(url: string): Target {
  if (url === 'sqlite::memory:') return { dialect: 'sqlite', path: ':memory:' }
  if (url.startsWith('sqlite:') && url.length > 'sqlite:'.length) {
    return { dialect: 'sqlite', path: url.slice('sqlite:'.length) }
  }
  if (/^postgres(ql)?:\/\/./.test(url)) return { dialect: 'postgres', url }
  throw new Error('DATABASE_URL must be sqlite:<path>, sqlite::memory:, postgres://… or postgresql://…')
}

// BIGINT values stay far below 2^53, so numbers are exact.
const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: (oid, format) => (oid === pg.types.builtins.INT8 ? Number : (pg.types.getTypeParser(oid, format) as (text: string) => unknown)),
}

/**
 * Whether a pooled client has a PostgreSQL backend of its own, not a pooler's. PostgreSQL tells a client its
 * backend's pid at connect (BackendKeyData); a pooler in transaction mode answers with a key of its own.
 */
const ownBackend = new WeakMap<pg.PoolClient, Promise<boolean>>()

function isOwnBackend(client: pg.PoolClient): Promise<boolean> {
  let known = ownBackend.get(client)
  if (!known) {
    const processId = (client as pg.PoolClient & { processID?: number }).processID
    // A silent server must not hold the connect forever.
    const config: pg.QueryConfig & { query_timeout?: number } = { text: 'select pg_backend_pid() as pid', query_timeout: QUERY_TIMEOUT_MS }
    known = client.query<{ pid: number }>(config).then(({ rows }) => processId !== undefined && rows[0]?.pid === processId)
    // A failed check is not kept: the client is dropped.
    known.catch(() => ownBackend.delete(client))
    ownBackend.set(client, known)
  }
  return known
}

/**
 * Statements with more parameters go unnamed: their texts vary with their number of rows or ids, and each name
 * kept is a statement the server holds for the connection's life.
 */
const MAX_NAMED_PARAMETERS = 64

/**
 * Kysely sends every query unnamed, so the server plans it on every execution. On a backend of its own, a
 * parameterised statement is named after its SQL text, so the connection prepares it once. Through a pooler in
 * transaction mode statements go unnamed: the next one may run on another server connection, where the name
 * would be missing (26000) or taken by another client (42P05). Unless the pooler keeps them (`poolerPrepares`,
 * DATABASE_POOLER_PREPARES): it then prepares each name on whichever server connection runs it.
 */
function withStatements(
  pool: pg.Pool,
  queryTimeoutMs: number | undefined,
  { prepare = true, poolerPrepares = false }: { prepare?: boolean; poolerPrepares?: boolean | undefined } = {},
): PostgresPool {
  const names = new Map<string, string>()
  const nameOf = (text: string) => {
    let name = names.get(text)
    if (name === undefined) names.set(text, (name = `q_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`))
    return name
  }
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect()
      // A connection that failed without the server saying why is closed on release: after pg's query_timeout
      // its query is still outstanding, so the next would queue behind it. A DatabaseError (e.g. 57014) leaves
      // the connection in a known state.
      let broken: Error | undefined
      // pg emits 'error' on a client whose connection ends, and the pool listens only while a client is idle:
      // unheard, it would crash the process. The query's own rejection is what the request sees.
      const onError = (error: Error) => (broken = error)
      client.on('error', onError)
      const release = () => {
        client.removeListener('error', onError)
        client.release(broken)
      }
      let named: boolean
      try {
        named = prepare && (poolerPrepares || (await isOwnBackend(client)))
      } catch (error) {
        broken = error as Error
        release()
        throw error
      }
      const run = (text: string, values: unknown[]) => {
        // pg reads query_timeout per query, but its typings lack it.
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
        // Only the (sql, parameters) form: the service never streams.
        query: run as unknown as PostgresPoolClient['query'],
        release,
      }
    },
    end: () => pool.end(),
  }
}

/**
 * PostgreSQL time bounds, so a database that is down or silent ends a request as 503 instead of hanging it: far
 * beyond any legitimate request query, yet short enough to answer before the client's own timeout.
 */
const CONNECT_TIMEOUT_MS = 5000
/**
 * Server side: the server cancels the statement (57014), freeing its locks; the connection stays usable. A role
 * default (POSTGRES_ROLE_SETTINGS), not sent: PgBouncer refuses it at startup, and a SET would stay on a pooled connection.
 */
export const STATEMENT_TIMEOUT_MS = 5000
/** Client side, for a server that never answers: later than the server's, so a living one reports 57014 first. */
const QUERY_TIMEOUT_MS = STATEMENT_TIMEOUT_MS + 2000

/**
 * Settings every session needs, kept as the role's defaults in its database (set by migrate()) rather than sent
 * per connection, so they hold through a pooler. jit off: the statements are short, and JIT compiled discovery's
 * candidate statement on large tables for far longer than it ran.
 */
export const POSTGRES_ROLE_SETTINGS: Readonly<Record<string, string>> = {
  statement_timeout: String(STATEMENT_TIMEOUT_MS),
  jit: 'off',
}

export interface OpenOptions {
  /** DATABASE_READ_URL: a standby of the PostgreSQL server `url` names. */
  readUrl?: string
  /** DATABASE_POOLER_PREPARES: statements are named through a pooler too, which keeps them. */
  poolerPrepares?: boolean
  /** Called for errors on idle PostgreSQL connections, which would otherwise crash the process. */
  onPoolError?: (error: Error) => void
  /** Told the operation and duration of every query, failed ones included. */
  observeQuery?: (operation: QueryOperation, seconds: number) => void
}

/** Kysely's log hook sees every query, raw and prepared ones included. Without an observer, no hook, no cost. */
function queryLog(observe: OpenOptions['observeQuery']): KyselyConfig['log'] {
  if (!observe) return undefined
  return (event) => observe(queryOperation(event.query), event.queryDurationMillis / 1000)
}

function postgresPool(url: string, options: OpenOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    types: pgTypes,
    // Bounds the wait for a free client too, when all are busy.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  })
  pool.on('error', (error) => options.onPoolError?.(error))
  return pool
}

function openReplica(url: string, options: OpenOptions, log: KyselyConfig['log']): Kysely<Tables> {
  const target = parseDatabaseUrl(url)
  if (target.dialect !== 'postgres') throw new Error('DATABASE_READ_URL must be postgres://… or postgresql://…')
  const pool = withStatements(postgresPool(target.url, options), QUERY_TIMEOUT_MS, { poolerPrepares: options.poolerPrepares })
  return new Kysely<Tables>({ dialect: new PostgresDialect({ pool }), log })
}

/**
 * `transact` on one Kysely: the pool's, or a connection's own (tests use the main SQLite connection's). A write
 * transaction of one statement on PostgreSQL runs without BEGIN and COMMIT (oneStatementOnPostgres).
 */
export const inTransaction =
  (db: Kysely<Tables>): Transact =>
  (fn, ...args) =>
    isOneStatementOnPostgres(fn) && onPostgres(db)
      ? // eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment -- the pool as a transaction: the function sends its one statement and nothing else
        fn(db as Tx, ...args)
      : db.transaction().execute((tx) => fn(tx, ...args))

export function openDatabase(url: string, options: OpenOptions = {}): Database {
  const target = parseDatabaseUrl(url)
  const log = queryLog(options.observeQuery)
  switch (target.dialect) {
    case 'sqlite': {
      if (options.readUrl !== undefined) throw new Error('DATABASE_READ_URL needs a PostgreSQL DATABASE_URL: SQLite has no standby to read from')
      const sqlite = openSqliteConnection(target.path)
      const kysely = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }), log })
      // No query timeout to lift: better-sqlite3 runs each statement synchronously to its end.
      // An in-memory database exists on this connection only: it is written here too.
      const thread = target.path === ':memory:' ? undefined : new SqliteWriter(target.path, log, options.observeQuery)
      const writer = thread?.kysely ?? kysely
      const transact: Transact = thread ? (fn, ...args) => thread.transact(fn, ...args) : inTransaction(kysely)
      return {
        kysely,
        unbounded: kysely,
        writer,
        transact,
        background: writer,
        transactBackground: transact,
        dialect: 'sqlite',
        sqlite: { connection: sqlite, path: target.path },
        close: async () => {
          await thread?.close()
          await kysely.destroy()
        },
      }
    }
    case 'postgres': {
      const pool = postgresPool(target.url, options)
      const { poolerPrepares } = options
      // The three share the pool, which close() ends once, after them: a Kysely ends its pool only if it ran a
      // query, and `migrate` runs on `unbounded` alone (its idle connection kept the process alive until pg's idle
      // timeout, 10 s).
      const sharing = (timeoutMs: number | undefined, statements: { prepare?: boolean; poolerPrepares?: boolean | undefined }) =>
        new Kysely<Tables>({ dialect: new PostgresDialect({ pool: { ...withStatements(pool, timeoutMs, statements), end: async () => {} } }), log })
      const kysely = sharing(QUERY_TIMEOUT_MS, { poolerPrepares })
      const unbounded = sharing(undefined, { poolerPrepares })
      const background = sharing(QUERY_TIMEOUT_MS, { prepare: false })
      const replica = options.readUrl === undefined ? undefined : openReplica(options.readUrl, options, log)
      let closed: Promise<void> | undefined
      return {
        kysely,
        unbounded,
        writer: kysely,
        transact: inTransaction(kysely),
        background,
        transactBackground: inTransaction(background),
        replica,
        dialect: 'postgres',
        close: () =>
          (closed ??= (async () => {
            await Promise.all([kysely.destroy(), unbounded.destroy(), background.destroy(), replica?.destroy()])
            await pool.end()
          })()),
      }
    }
  }
}
