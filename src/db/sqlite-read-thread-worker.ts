/**
 * The SQLite reader thread (see sqlite-read-thread.ts): its own connection to the database file, on which the
 * reads handed to it run, one at a time, in the order they came.
 */
import type SQLite from 'better-sqlite3'
import { parentPort, workerData, type MessagePort } from 'node:worker_threads'
import { ArrivingTogether } from './arriving-together.js'
import { openSqliteConnection } from './sqlite-connection.js'
import type { Read, ReadColumns, ReadReply, ReadRequest } from './sqlite-read-thread.js'

/** Statement texts kept prepared: the few fixed queries sent here, with room to spare. */
const STATEMENT_CACHE_SIZE = 64

if (!parentPort) throw new Error('sqlite-read-thread-worker runs as a worker thread')
const port: MessagePort = parentPort
const db = openSqliteConnection((workerData as { path: string }).path)
const statements = new Map<string, { statement: SQLite.Statement; names: string[] }>()

function prepared(sql: string): { statement: SQLite.Statement; names: string[] } {
  let entry = statements.get(sql)
  if (!entry) {
    const statement = db.prepare(sql)
    if (!statement.reader) throw Object.assign(new Error('the SQLite reader thread runs reads only'), { code: 'SQLITE_MISUSE' })
    // Rows as arrays: they are sent by column (ReadColumns), and objects would only be taken apart again.
    statement.raw(true)
    entry = { statement, names: statement.columns().map((column) => column.name) }
    if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value as string)
    statements.set(sql, entry)
  }
  return entry
}

/** The rows by column: all-number columns as a Float64Array (an integer up to 2^53 is exact in a double). */
function byColumn(names: string[], rows: unknown[][]): ReadColumns {
  const values = names.map((_, c) => {
    let numbers = true
    for (const row of rows) if (typeof row[c] !== 'number') numbers = false
    const column = numbers ? new Float64Array(rows.length) : new Array<unknown>(rows.length)
    for (let k = 0; k < rows.length; k++) column[k] = (rows[k] as unknown[])[c] as never
    return column
  })
  return { names, values, count: rows.length }
}

/** One read's rows by column, or the error it failed with. */
function answer({ id, sql, parameters }: Read): ReadReply {
  const started = performance.now()
  try {
    const { statement, names } = prepared(sql)
    const rows = statement.all(...parameters) as unknown[][]
    return { id, seconds: (performance.now() - started) / 1000, columns: byColumn(names, rows) }
  } catch (error) {
    const { message: text, code } = error as { message: string; code?: unknown }
    return { id, seconds: (performance.now() - started) / 1000, error: { message: String(text), code } }
  }
}

/**
 * Every read waiting, answered in one message: a message each cost both threads a wake-up and a clone (~165 µs of
 * CPU for a read alone, ~25 µs each with 16 waiting, on the 2-core machine of docs/benchmarks.md). A read's answer
 * so waits for the others of its batch; the reads sent here are discovery's candidate queries, all short.
 */
const reads = new ArrivingTogether<Read>((waiting) => port.postMessage(waiting.map(answer)))

port.on('message', (message: ReadRequest) => {
  if (message.type === 'close') {
    reads.flush()
    db.close()
    port.close()
    return
  }
  reads.push(message)
})
