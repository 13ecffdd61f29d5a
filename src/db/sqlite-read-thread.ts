import { ModuleThread } from './module-worker.js'

/** One read: a statement's text and its parameters, answered under `id`. */
export interface Read {
  type: 'all'
  id: number
  sql: string
  parameters: readonly unknown[]
}

export type ReadRequest = Read | { type: 'close' }

/**
 * A read's rows by column: each column's values in row order, a Float64Array when they are all numbers. Sending
 * a discovery read's ~40 rows of 5 columns through a MessageChannel cost 33–57 µs of both sides' time as objects
 * (the read itself is ~90 µs), 8–13 µs by column: structured clone copies a typed array as bytes, with no object
 * shapes to rebuild.
 */
export interface ReadColumns {
  names: string[]
  values: Array<Float64Array | unknown[]>
  count: number
}

/** A read's rows, or the error it failed with (code as SQLite names it: dialect.ts classifies by it). */
export type ReadReply = { id: number; seconds: number } & ({ columns: ReadColumns } | { error: { message: string; code: unknown } })

/** A blob crosses threads as a Uint8Array: a Buffer again, as the main connection returns it. */
const asBuffer = (value: unknown) => (value instanceof Uint8Array ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value)

/** Rows again from their columns (ReadColumns), as better-sqlite3 would have returned them. */
export function rowsOf({ names, values, count }: ReadColumns): Array<Record<string, unknown>> {
  const columns = values.map((column) => (column instanceof Float64Array ? column : column.map(asBuffer)))
  const rows: Array<Record<string, unknown>> = new Array(count)
  for (let k = 0; k < count; k++) {
    const row: Record<string, unknown> = {}
    for (let c = 0; c < names.length; c++) row[names[c] as string] = (columns[c] as ArrayLike<unknown>)[k]
    rows[k] = row
  }
  return rows
}

/**
 * Reads of a SQLite file that run on a thread of their own. better-sqlite3 is synchronous: a read on the event
 * loop holds every other request while it runs. For the requests that are mostly one costly read (discovery's
 * spatial query, ~200 µs at a city centre), that kept the event loop saturated at ~2,000 requests a second, and
 * a saturated event loop serves its connections unevenly: p99 at 50 connections was 15× the median. Here the
 * read runs beside the event loop, on its own connection (WAL: it sees every commit made before it starts, as
 * the main connection would), and the event loop only parses, checks and writes.
 *
 * One thread: SQLite reads on separate connections could run in parallel, but this machine class has 2 cores,
 * one of them the event loop's, and with one reader the machine was already ~90% busy (docs/benchmarks.md). The
 * thread starts with the first read and is started again if it dies.
 */
export class SqliteReadThread {
  readonly #thread: ModuleThread<{ resolve(rows: unknown[]): void; reject(error: unknown): void }, ReadReply[]>

  constructor(
    path: string,
    /** Told each read's duration on the thread (the query histogram of /metrics). */
    observe?: (seconds: number) => void,
  ) {
    this.#thread = new ModuleThread(import.meta.url, 'sqlite-read-thread-worker', { path }, 'SQLite reader thread', (replies: ReadReply[]) => {
      for (const reply of replies) {
        const pending = this.#thread.take(reply.id)
        if (!pending) continue
        observe?.(reply.seconds)
        if ('columns' in reply) pending.resolve(rowsOf(reply.columns))
        else pending.reject(Object.assign(new Error(reply.error.message), { name: 'SqliteError', code: reply.error.code }))
      }
    })
  }

  all<Row>(sql: string, parameters: readonly unknown[]): Promise<Row[]> {
    return new Promise<unknown[]>((resolve, reject) => {
      this.#thread.send((id) => ({ type: 'all', id, sql, parameters }) satisfies ReadRequest, { resolve, reject })
    }) as Promise<Row[]>
  }

  close(): Promise<void> {
    return this.#thread.close({ type: 'close' } satisfies ReadRequest)
  }
}
