/**
 * The SQLite reader thread (see sqlite-read-thread.ts): its own connection to the database file, on which the
 * reads handed to it run, one at a time, in the order they came.
 */
import type SQLite from 'better-sqlite3'
import { parentPort, workerData, type MessagePort } from 'node:worker_threads'
import { openSqliteConnection } from './sqlite-connection.js'
import type { ReadReply, ReadRequest } from './sqlite-read-thread.js'

/** Statement texts kept prepared: the few fixed queries sent here, with room to spare. */
const STATEMENT_CACHE_SIZE = 64

if (!parentPort) throw new Error('sqlite-read-thread-worker runs as a worker thread')
const port: MessagePort = parentPort
const db = openSqliteConnection((workerData as { path: string }).path)
const statements = new Map<string, SQLite.Statement>()

function prepared(sql: string): SQLite.Statement {
  let statement = statements.get(sql)
  if (!statement) {
    statement = db.prepare(sql)
    if (!statement.reader) throw Object.assign(new Error('the SQLite reader thread runs reads only'), { code: 'SQLITE_MISUSE' })
    if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value as string)
    statements.set(sql, statement)
  }
  return statement
}

port.on('message', (message: ReadRequest) => {
  if (message.type === 'close') {
    db.close()
    port.close()
    return
  }
  const started = performance.now()
  let reply: ReadReply
  try {
    const rows = prepared(message.sql).all(...message.parameters) as unknown[]
    reply = { id: message.id, seconds: (performance.now() - started) / 1000, rows }
  } catch (error) {
    const { message: text, code } = error as { message: string; code?: unknown }
    reply = { id: message.id, seconds: (performance.now() - started) / 1000, error: { message: String(text), code } }
  }
  port.postMessage(reply)
})
