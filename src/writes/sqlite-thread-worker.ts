/**
 * The SQLite writer thread (see sqlite-thread.ts): its own connection to the database file, on which every write
 * of the service runs. Writes that arrive while a commit runs wait in the port and go into the next transaction
 * together (group commit).
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads'
import { ArrivingTogether } from '../db/arriving-together.js'
import { openSqliteConnection } from '../db/sqlite-connection.js'
import { sqliteBatchRunner } from './sqlite-batch.js'
import type { ThreadReply, ThreadRequest } from './sqlite-thread.js'

/** At most this many writes per transaction, so one commit never keeps a long queue waiting on it. */
const MAX_BATCH = 64

if (!parentPort) throw new Error('sqlite-thread-worker runs as a worker thread')
const port: MessagePort = parentPort
const db = openSqliteConnection((workerData as { path: string }).path)
const runBatch = sqliteBatchRunner(db)
/** Writes that arrived together, committed in transactions of at most MAX_BATCH. */
const writes = new ArrivingTogether<Extract<ThreadRequest, { type: 'run' }>>((waiting) => {
  for (let at = 0; at < waiting.length; at += MAX_BATCH) {
    const requests = waiting.slice(at, at + MAX_BATCH)
    const started = performance.now()
    const outcomes = runBatch(requests.map((request) => request.job))
    const reply: ThreadReply = {
      seconds: (performance.now() - started) / 1000,
      outcomes: requests.map((request, i) => ({ id: request.id, outcome: outcomes[i] as (typeof outcomes)[number] })),
    }
    port.postMessage(reply)
  }
})

port.on('message', (message: ThreadRequest) => {
  if (message.type === 'close') {
    writes.flush()
    db.close()
    port.close()
    return
  }
  writes.push(message)
})
