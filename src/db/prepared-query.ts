import { createQueryId, type CompiledQuery, type Kysely } from 'kysely'
import type { DialectName } from './connection.js'
import { onPostgres } from './dialect.js'
import type { Tables } from './tables.js'

/** Stands in for a parameter while the query is compiled; found again by identity among the parameters. */
class Slot {
  constructor(readonly name: string) {}
}

/** Runs a compiled statement on a connection at hand, without Kysely's executor: see runsDirectly. */
export type DirectRunner = (query: CompiledQuery) => unknown[]

const directRunners = new WeakMap<Kysely<Tables>, DirectRunner>()

/**
 * Has PreparedQuery run its statements on `db` (a transaction) through `run`: the SQLite writer thread's, where
 * better-sqlite3 answers synchronously and Kysely's executor cost more than a small write's statements themselves.
 * Only the execution changes: the statement is the one Kysely compiled.
 */
export function runsDirectly(db: Kysely<Tables>, run: DirectRunner): void {
  directRunners.set(db, run)
}

/** A query builder, or an `sql` template (whose compile() needs the database for its dialect). */
interface Buildable<Row> {
  compile(db: Kysely<Tables>): CompiledQuery<Row>
}

/**
 * A query of fixed shape, compiled once; each execution only binds its parameters. Every parameter must come from
 * `param(name)` (checked on first use), so a literal cannot be frozen in by mistake.
 */
export class PreparedQuery<Params extends Record<string, unknown>, Row> {
  #compiled?: { sql: string; query: CompiledQuery['query']; names: Array<keyof Params> }

  constructor(
    private readonly db: Kysely<Tables>,
    private readonly build: (db: Kysely<Tables>, param: <K extends keyof Params & string>(name: K) => Params[K]) => Buildable<Row>,
  ) {}

  execute(params: Params): Promise<Row[]> {
    return this.executeIn(this.db, params)
  }

  /** On another Kysely of the same dialect: a transaction's. */
  async executeIn(db: Kysely<Tables>, params: Params): Promise<Row[]> {
    const { sql, query, parameters } = this.bound(params)
    const compiled: CompiledQuery<Row> = { sql, query, queryId: createQueryId(), parameters }
    const run = directRunners.get(db)
    if (run) return run(compiled) as Row[]
    const result = await db.executeQuery<Row>(compiled)
    return result.rows
  }

  /** The statement and parameters an execution with `params` sends (EXPLAIN in tests sends them too). */
  bound(params: Params): { sql: string; query: CompiledQuery['query']; parameters: unknown[] } {
    const { sql, query, names } = (this.#compiled ??= this.#compile())
    return { sql, query, parameters: names.map((name) => params[name]) }
  }

  #compile() {
    const compiled = this.build(this.db, (name) => new Slot(name) as never).compile(this.db)
    const names = compiled.parameters.map((value) => {
      if (!(value instanceof Slot)) throw new Error(`PreparedQuery: parameter ${String(value)} is not a param()`)
      return value.name
    })
    return { sql: compiled.sql, query: compiled.query, names }
  }
}

/**
 * A PreparedQuery of each dialect, made on first use with the connection or transaction at hand: for a write
 * transaction's statements, which run on the main connection (PostgreSQL) or the SQLite writer thread's.
 */
export function perDialect<Params extends Record<string, unknown>, Row>(
  build: (db: Kysely<Tables>, param: <K extends keyof Params & string>(name: K) => Params[K], dialect: DialectName) => Buildable<Row>,
): (db: Kysely<Tables>) => PreparedQuery<Params, Row> {
  const made: Partial<Record<DialectName, PreparedQuery<Params, Row>>> = {}
  return (db) => {
    const dialect = onPostgres(db) ? 'postgres' : 'sqlite'
    return (made[dialect] ??= new PreparedQuery<Params, Row>(db, (on, param) => build(on, param, dialect)))
  }
}
