/** The SQLite writer thread: every write transaction runs on its connection, statement by statement. */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads'
import type SQLite from 'better-sqlite3'
import { openSqliteConnection } from './sqlite-connection.js'
import type { WriterReply, WriterRequest } from './sqlite-writer-thread.js'

if (!parentPort) throw new Error('sqlite-writer-worker runs as a worker thread')
const port: MessagePort = parentPort
const db = openSqliteConnection((workerData as { path: string }).path)

/** The write statements are a fixed set of texts: each is prepared once. */
const statements = new Map<string, SQLite.Statement>()
const prepare = (sql: string) => {
  let statement = statements.get(sql)
  if (!statement) statements.set(sql, (statement = db.prepare(sql)))
  return statement
}

function run(sql: string, parameters: readonly unknown[], begin: boolean): Omit<Extract<WriterReply, { rows: unknown[] }>, 'id'> {
  // A DEFERRED transaction that reads, then writes, after another process's commit fails with SQLITE_BUSY at once
  // instead of waiting busy_timeout.
  if (begin) prepare('begin immediate').run()
  // SQLite may have rolled the transaction back itself (SQLITE_FULL, IOERR, BUSY): a ROLLBACK would fail and hide why.
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
