/**
 * The SQLite writer thread (see sqlite-writer.ts): its own connection to the database file, on which every
 * listing create is written. Creates that arrive while a commit runs wait in the port and go into the next
 * transaction together (group commit).
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads'
import { openSqliteConnection } from '../db/sqlite-connection.js'
import { sqliteListingWriter } from './sqlite-insert.js'
import type { WriterReply, WriterRequest } from './sqlite-writer.js'

/** At most this many creates per transaction, so one commit never keeps a long queue waiting on it. */
const MAX_BATCH = 64

if (!parentPort) throw new Error('sqlite-writer-worker runs as a worker thread')
const port: MessagePort = parentPort
const db = openSqliteConnection((workerData as { path: string }).path)
const write = sqliteListingWriter(db)
const queue: Array<Extract<WriterRequest, { type: 'write' }>> = []
let scheduled = false

function flush() {
  scheduled = false
  while (queue.length > 0) {
    const jobs = queue.splice(0, MAX_BATCH)
    const started = performance.now()
    const outcomes = write(jobs.map((job) => job.write))
    const reply: WriterReply = {
      seconds: (performance.now() - started) / 1000,
      outcomes: jobs.map((job, i) => ({ id: job.id, outcome: outcomes[i] as (typeof outcomes)[number] })),
    }
    port.postMessage(reply)
  }
}

port.on('message', (message: WriterRequest) => {
  if (message.type === 'close') {
    flush()
    db.close()
    port.close()
    return
  }
  queue.push(message)
  // Not at once: every message already in the port is delivered before setImmediate runs, and joins this batch.
  if (!scheduled) {
    scheduled = true
    setImmediate(flush)
  }
})
