import { once } from 'node:events'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { Database } from '../db/connection.js'
import { sqliteListingWriter, type WriteOutcome } from './sqlite-insert.js'
import type { ListingWrite, ListingWriter, StoredListing } from './writer.js'

export type WriterRequest = { type: 'write'; id: number; write: ListingWrite } | { type: 'close' }
/** One batch's answers, after its commit, and how long the batch took (statements and commit). */
export interface WriterReply {
  seconds: number
  outcomes: Array<{ id: number; outcome: WriteOutcome }>
}

/** The error a write failed with, as the rest of the service classifies errors (dialect.ts reads `code`). */
function settle(outcome: WriteOutcome): StoredListing {
  if (outcome.ok) return { listingId: outcome.listingId, expiresAtUnix: outcome.expiresAtUnix }
  throw Object.assign(new Error(outcome.error.message), { name: 'SqliteError', code: outcome.error.code })
}

/**
 * Where SQLite listing creates are written. better-sqlite3 is synchronous: on the event loop, every create's
 * statements, its commit (an fsync) and now and then a WAL checkpoint (copying ~4 MB back into the database
 * and another fsync) stopped every other request while they ran. So a file database is written by a worker
 * thread on its own connection (WAL lets the main connection keep reading meanwhile), creates that arrive
 * together share one commit, and a lock held by another process is waited for there, not on the event loop.
 * An in-memory database exists only on its own connection: it is written there, in line.
 */
export function sqliteListingWriterFor(
  { path, connection }: NonNullable<Database['sqlite']>,
  observeQuery: Database['observeQuery'],
): ListingWriter {
  const observe = (seconds: number) => observeQuery?.('insert', seconds)
  if (path === ':memory:') {
    const writeBatch = sqliteListingWriter(connection)
    return {
      write: async (write) => {
        const started = performance.now()
        const [outcome] = writeBatch([write])
        observe((performance.now() - started) / 1000)
        return settle(outcome as WriteOutcome)
      },
      close: async () => {},
    }
  }
  return new WorkerWriter(path, observe)
}

// Built, the worker is a .js file next to this one. Run from source under tsx (the tests), it is a .ts file,
// and a worker thread inherits no loader (not even given --import tsx, on Node 20): it registers tsx itself.
const WORKER_URL = new URL(`./sqlite-writer-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url)
function startWorker(workerData: unknown): Worker {
  if (!WORKER_URL.pathname.endsWith('.ts')) return new Worker(WORKER_URL, { workerData })
  const script = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}) })`
  return new Worker(script, { eval: true, workerData })
}

class WorkerWriter implements ListingWriter {
  #worker?: Worker
  readonly #pending = new Map<number, { resolve(stored: StoredListing): void; reject(error: unknown): void }>()
  #nextId = 0

  constructor(
    private readonly path: string,
    private readonly observe: (seconds: number) => void,
  ) {}

  write(write: ListingWrite): Promise<StoredListing> {
    const worker = (this.#worker ??= this.#start())
    const id = ++this.#nextId
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject })
      // Only a write waiting for its answer keeps the process alive; an idle writer never holds up an exit.
      worker.ref()
      worker.postMessage({ type: 'write', id, write } satisfies WriterRequest)
    })
  }

  async close(): Promise<void> {
    const worker = this.#worker
    if (!worker) return
    this.#worker = undefined
    const exited = once(worker, 'exit')
    worker.ref() // unreferenced, the process could end before the thread has closed its connection
    worker.postMessage({ type: 'close' } satisfies WriterRequest)
    await exited
  }

  #start(): Worker {
    const worker = startWorker({ path: this.path })
    worker.on('message', ({ seconds, outcomes }: WriterReply) => {
      for (const { id, outcome } of outcomes) {
        const pending = this.#pending.get(id)
        this.#pending.delete(id)
        this.observe(seconds)
        try {
          pending?.resolve(settle(outcome))
        } catch (error) {
          pending?.reject(error)
        }
      }
      if (this.#pending.size === 0) worker.unref()
    })
    // A thread that dies (it could not open the file, or a bug) fails what it held; the next create starts a
    // new one. Whether a failed batch committed is unknown to the client either way: a retry with the same
    // referenceId is answered as a replay if it did.
    const fail = (error: Error) => {
      for (const { reject } of this.#pending.values()) reject(error)
      this.#pending.clear()
      if (this.#worker === worker) this.#worker = undefined
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`the SQLite writer thread exited (code ${code})`)))
    return worker
  }
}
