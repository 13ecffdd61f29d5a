import { once } from 'node:events'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { QueryResult } from 'kysely'

export type WriterRequest = { type: 'run'; id: number; sql: string; parameters: readonly unknown[]; begin: boolean } | { type: 'close' }
export type WriterReply =
  { id: number; rows: unknown[]; changes?: number; lastInsertRowid?: number } | { id: number; error: { message: string; code?: string } }

interface Pending {
  resolve(result: QueryResult<unknown>): void
  reject(error: unknown): void
}

/**
 * The writer thread's module, next to this one. Run from source it is a .ts file, and a worker thread inherits no
 * loader (not even --import tsx, on Node 20): it registers tsx itself.
 */
function startWorker(path: string): Worker {
  const url = new URL(`./sqlite-writer-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url)
  const workerData = { path }
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { workerData })
  const script = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url.href)}) })`
  return new Worker(script, { eval: true, workerData })
}

/**
 * The writer thread, answering statements by id: started with the first statement, started again after it dies
 * (failing the statements it held).
 */
export class SqliteWriterThread {
  #worker?: Worker
  readonly #pending = new Map<number, Pending>()
  #nextId = 0

  constructor(private readonly path: string) {}

  /** `begin`: the statement opens a transaction, so the thread runs BEGIN IMMEDIATE first. */
  run(sql: string, parameters: readonly unknown[], begin: boolean): Promise<QueryResult<unknown>> {
    return new Promise((resolve, reject) => {
      const worker = (this.#worker ??= this.#start())
      const id = ++this.#nextId
      this.#pending.set(id, { resolve, reject })
      // Only a statement waiting for its answer keeps the process alive; an idle thread never holds up an exit.
      worker.ref()
      worker.postMessage({ type: 'run', id, sql, parameters, begin } satisfies WriterRequest)
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

  #answer(reply: WriterReply): void {
    const pending = this.#pending.get(reply.id)
    this.#pending.delete(reply.id)
    if (!pending) return
    if ('error' in reply) {
      // Errors are classified by SQLite's code (isDatabaseUnavailable).
      pending.reject(Object.assign(new Error(reply.error.message), { name: 'SqliteError', code: reply.error.code }))
      return
    }
    pending.resolve({
      rows: reply.rows,
      numAffectedRows: reply.changes === undefined ? undefined : BigInt(reply.changes),
      insertId: reply.lastInsertRowid === undefined ? undefined : BigInt(reply.lastInsertRowid),
    })
  }

  #start(): Worker {
    const worker = startWorker(this.path)
    worker.on('message', (reply: WriterReply) => {
      this.#answer(reply)
      if (this.#pending.size === 0) worker.unref()
    })
    // A thread that dies (it could not open the file, or a bug) fails what it held; the next statement starts a new one.
    const fail = (error: Error) => {
      for (const pending of this.#pending.values()) pending.reject(error)
      this.#pending.clear()
      if (this.#worker === worker) this.#worker = undefined
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`the SQLite writer thread exited (code ${code})`)))
    return worker
  }
}
