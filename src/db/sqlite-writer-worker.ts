/**
 * The SQLite writer thread (sqlite-writer.ts): its own connection to the database file, on which every write
 * transaction of the service runs, statement by statement as Kysely sends them.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads'
import type SQLite from 'better-sqlite3'
import { openSqliteConnection } from './sqlite-connection.js'
import type { WriterReply, WriterRequest } from './sqlite-writer.js'

if (!parentPort) throw new Error('sqlite-writer-worker runs as a worker thread')
const port: MessagePort = parentPort
const db = openSqliteConnection((workerData as { path: string }).path)

/** The service's write statements are a fixed set of texts: each is prepared once. */
const statements = new Map<string, SQLite.Statement>()
const prepare = (sql: string) => {
  let statement = statements.get(sql)
  if (!statement) statements.set(sql, (statement = db.prepare(sql)))
  return statement
}

function run(sql: string, parameters: readonly unknown[], begin: boolean): Omit<Extract<WriterReply, { rows: unknown[] }>, 'id'> {
  // IMMEDIATE: the write lock from the start. A DEFERRED transaction that reads, then writes, after another
  // process's commit fails with SQLITE_BUSY at once instead of waiting busy_timeout.
  if (begin) prepare('begin immediate').run()
  // SQLite may already have rolled the transaction back itself (SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY): a ROLLBACK
  // then would fail and hide the error that caused it.
  if (sql === 'rollback' && !db.inTransaction) return { rows: [] }
  const statement = prepare(sql)
  if (statement.reader) return { rows: statement.all(...parameters) }
  const { changes, lastInsertRowid } = statement.run(...parameters)
  return { rows: [], changes, lastInsertRowid: Number(lastInsertRowid) }
}

port.on('message', (message: WriterRequest) => {
  if (message.type === 'close') {
    db.close()
    port.close()
    return
  }
  let reply: WriterReply
  try {
    reply = { id: message.id, ...run(message.sql, message.parameters, message.begin) }
  } catch (error) {
    const { message: text, code } = error as { message?: unknown; code?: unknown }
    reply = { id: message.id, error: { message: String(text ?? error), ...(typeof code === 'string' ? { code } : {}) } }
  }
  port.postMessage(reply)
})
