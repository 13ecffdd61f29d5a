import { once } from 'node:events'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { JobOutcome } from './sqlite-batch.js'
import type { ScriptJob } from './scripts.js'

export type ThreadRequest = { type: 'run'; id: number; job: ScriptJob } | { type: 'close' }
/** One batch's answers, after its commit, and how long the batch took (statements and commit). */
export interface ThreadReply {
  seconds: number
  outcomes: Array<{ id: number; outcome: JobOutcome }>
}

/** The value a script returned, or the error it failed with, as the rest of the service classifies errors (dialect.ts reads `code`). */
export function settle(outcome: JobOutcome): unknown {
  if (outcome.ok) return outcome.value
  throw Object.assign(new Error(outcome.error.message), { name: 'SqliteError', code: outcome.error.code })
}

// Built, the worker is a .js file next to this one. Run from source under tsx (the tests), it is a .ts file,
// and a worker thread inherits no loader (not even given --import tsx, on Node 20): it registers tsx itself.
const WORKER_URL = new URL(`./sqlite-thread-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url)
function startWorker(workerData: unknown): Worker {
  if (!WORKER_URL.pathname.endsWith('.ts')) return new Worker(WORKER_URL, { workerData })
  const script = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(WORKER_URL.href)}) })`
  return new Worker(script, { eval: true, workerData })
}

/**
 * Where a SQLite file is written. better-sqlite3 is synchronous: on the event loop, every write's statements,
 * its commit (an fsync) and now and then a WAL checkpoint (copying ~4 MB back into the database and another
 * fsync) stopped every other request while they ran. So a file database is written by a worker thread on its
 * own connection (WAL lets the main connection keep reading meanwhile), writes that arrive together share one
 * commit, and a lock held by another process is waited for there, not on the event loop.
 *
 * The thread starts with the first write and is started again if it dies.
 */
export class SqliteWriteThread {
  #worker?: Worker
  readonly #pending = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void; job: ScriptJob }>()
  #nextId = 0

  constructor(
    private readonly path: string,
    /** Told each write's script name and its batch's duration (statements and commit). */
    private readonly observe: (job: ScriptJob, seconds: number) => void,
  ) {}

  run(job: ScriptJob): Promise<unknown> {
    const worker = (this.#worker ??= this.#start())
    const id = ++this.#nextId
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, job })
      // Only a write waiting for its answer keeps the process alive; an idle writer never holds up an exit.
      worker.ref()
      worker.postMessage({ type: 'run', id, job } satisfies ThreadRequest)
    })
  }

  async close(): Promise<void> {
    const worker = this.#worker
    if (!worker) return
    this.#worker = undefined
    const exited = once(worker, 'exit')
    worker.ref() // unreferenced, the process could end before the thread has closed its connection
    worker.postMessage({ type: 'close' } satisfies ThreadRequest)
    await exited
  }

  #start(): Worker {
    const worker = startWorker({ path: this.path })
    worker.on('message', ({ seconds, outcomes }: ThreadReply) => {
      for (const { id, outcome } of outcomes) {
        const pending = this.#pending.get(id)
        this.#pending.delete(id)
        if (!pending) continue
        this.observe(pending.job, seconds)
        try {
          pending.resolve(settle(outcome))
        } catch (error) {
          pending.reject(error)
        }
      }
      if (this.#pending.size === 0) worker.unref()
    })
    // A thread that dies (it could not open the file, or a bug) fails what it held; the next write starts a
    // new one. Whether a failed batch committed is unknown to the client either way: a retried create with the
    // same referenceId is answered as a replay if it did, a retried change finds it made.
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
