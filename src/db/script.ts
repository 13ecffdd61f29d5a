/**
 * Write transactions written once for both databases. A script is a generator that yields the statements it
 * wants run and receives their rows back, so the same lines of logic (read a listing, decide, write it and its
 * event) run synchronously on better-sqlite3, inside the SQLite writer thread's group commit, and
 * asynchronously on PostgreSQL, inside one transaction on a pooled connection. Neither runner knows what a
 * script does; a script never knows which runner it is on, except through the few SQL pieces of ScriptSql.
 *
 * This module loads no Kysely or pg: the SQLite writer thread imports every script (and this) at its start.
 */

/** One statement with `?` placeholders; the PostgreSQL runner numbers them. */
export interface Statement {
  readonly sql: string
  readonly params: readonly unknown[]
}

/** A script: yields statements, receives each one's rows (none for a statement that returns no rows). */
export type Script<T> = Generator<Statement, T, readonly unknown[]>

/** Runs a statement and gives its rows. */
export function* query<Row>(sql: string, params: readonly unknown[] = []): Generator<Statement, Row[], readonly unknown[]> {
  return (yield { sql, params }) as Row[]
}

/** Runs a statement and gives its first row, if any. */
export function* queryOne<Row>(sql: string, params: readonly unknown[] = []): Generator<Statement, Row | undefined, readonly unknown[]> {
  const rows = (yield { sql, params }) as Row[]
  return rows[0]
}

/** Runs a statement whose rows, if any, are not wanted. */
export function* execute(sql: string, params: readonly unknown[] = []): Generator<Statement, void, readonly unknown[]> {
  yield { sql, params }
}

export type ScriptDialect = 'sqlite' | 'postgres'

/** Column types of a JSON array parameter read as rows (jsonRows). */
export type JsonColumnType = 'text' | 'bigint' | 'integer' | 'double precision'

/** The SQL that differs between the dialects inside scripts; each piece says why. */
export interface ScriptSql {
  readonly dialect: ScriptDialect
  /**
   * Locks the rows read until the transaction ends. PostgreSQL: FOR UPDATE, so two instances changing one
   * listing serialise. SQLite: nothing to add, a write transaction is already the only one (BEGIN IMMEDIATE).
   */
  readonly forUpdate: string
  /** As forUpdate, but rows another transaction holds are passed over instead of waited for (the sweepers). */
  readonly forUpdateSkipLocked: string
  /**
   * A FROM item (with `alias`) whose rows are the objects of one JSON array parameter (one `?`): many rows in
   * one statement of fixed text, whatever their number, so PostgreSQL prepares it once.
   */
  jsonRows(alias: string, columns: Record<string, JsonColumnType>): string
  /**
   * `expression` is one of the strings of a JSON array parameter (one `?`), as a condition an index answers: the
   * one way to ask for rows by a list of ids (discovery's reads use it too, spatial-index.ts). jsonRows in an IN
   * list is not that on PostgreSQL: it estimates a set-returning function at 100 rows, so it hashes them and reads
   * the whole table instead of looking each one up (6 ms per statement with 30,000 deliveries owed).
   */
  inJsonList(expression: string): string
  /** The larger of two values: SQLite's scalar max() is PostgreSQL's greatest(). */
  readonly greatest: string
}

const sqliteSql: ScriptSql = {
  dialect: 'sqlite',
  forUpdate: '',
  forUpdateSkipLocked: '',
  jsonRows: (alias, columns) =>
    `(select ${Object.keys(columns)
      .map((name) => `json_extract(value, '$.${name}') as ${name}`)
      .join(', ')} from json_each(?)) as ${alias}`,
  inJsonList: (expression) => `${expression} in (select value from json_each(?))`,
  greatest: 'max',
}

const postgresSql: ScriptSql = {
  dialect: 'postgres',
  forUpdate: ' for update',
  forUpdateSkipLocked: ' for update skip locked',
  jsonRows: (alias, columns) =>
    `jsonb_to_recordset(cast(? as jsonb)) as ${alias}(${Object.entries(columns)
      .map(([name, type]) => `${name} ${type}`)
      .join(', ')})`,
  // An array made by a subquery is a value to PostgreSQL's planner: `= any` of it is an index condition.
  inJsonList: (expression) => `${expression} = any(array(select jsonb_array_elements_text(cast(? as jsonb))))`,
  greatest: 'greatest',
}

export const scriptSql: Record<ScriptDialect, ScriptSql> = { sqlite: sqliteSql, postgres: postgresSql }

const NO_ROWS: readonly unknown[] = Object.freeze([])

/** A prepared better-sqlite3 statement, as much of it as runSync needs. */
export interface SyncStatement {
  readonly reader: boolean
  all(...params: unknown[]): unknown[]
  run(...params: unknown[]): unknown
}

/** Runs a script to its end on a synchronous connection (better-sqlite3); the caller owns the transaction. */
export function runSync<T>(script: Script<T>, prepare: (sql: string) => SyncStatement): T {
  let rows: readonly unknown[] = NO_ROWS
  for (;;) {
    const step = script.next(rows)
    if (step.done) return step.value
    const statement = prepare(step.value.sql)
    if (statement.reader) {
      rows = statement.all(...step.value.params)
    } else {
      statement.run(...step.value.params)
      rows = NO_ROWS
    }
  }
}

/** `?` placeholders as PostgreSQL's `$1, $2…`. Scripts never put a `?` inside a string literal. */
const numbered = new Map<string, string>()
export function numberPlaceholders(sql: string): string {
  let text = numbered.get(sql)
  if (text === undefined) {
    let n = 0
    text = sql.replace(/\?/g, () => `$${++n}`)
    numbered.set(sql, text)
  }
  return text
}

/** Runs a script to its end on an asynchronous connection (PostgreSQL); the caller owns the transaction. */
export async function runAsync<T>(script: Script<T>, run: (sql: string, params: readonly unknown[]) => Promise<readonly unknown[]>): Promise<T> {
  let rows: readonly unknown[] = NO_ROWS
  for (;;) {
    const step = script.next(rows)
    if (step.done) return step.value
    rows = await run(numberPlaceholders(step.value.sql), step.value.params)
  }
}
