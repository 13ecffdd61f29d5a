import { once } from 'node:events'
import { extname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'

/**
 * The module `name` next to `base` (an import.meta.url). Run from source it is a .ts file, and a worker thread
 * inherits no loader (not even --import tsx, on Node 20): it registers tsx itself.
 */
function startModuleWorker(base: string, name: string, workerData: unknown): Worker {
  const url = new URL(`./${name}${extname(fileURLToPath(base))}`, base)
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { workerData })
  const script = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url.href)}) })`
  return new Worker(script, { eval: true, workerData })
}

/**
 * A worker thread answering requests by id: started with the first request, started again after it dies (failing
 * the requests it held).
 */
export class ModuleThread<Pending extends { reject(error: unknown): void }, Reply> {
  #worker?: Worker
  readonly #pending = new Map<number, Pending>()
  #nextId = 0

  constructor(
    private readonly base: string,
    private readonly name: string,
    private readonly workerData: unknown,
    /** Named in the error of requests held by a thread that exits. */
    private readonly description: string,
    private readonly onReply: (reply: Reply) => void,
  ) {}

  send(message: (id: number) => unknown, pending: Pending): void {
    const worker = (this.#worker ??= this.#start())
    const id = ++this.#nextId
    this.#pending.set(id, pending)
    // Only a request waiting for its answer keeps the process alive; an idle thread never holds up an exit.
    worker.ref()
    worker.postMessage(message(id))
  }

  take(id: number): Pending | undefined {
    const pending = this.#pending.get(id)
    this.#pending.delete(id)
    return pending
  }

  async close(message: unknown): Promise<void> {
    const worker = this.#worker
    if (!worker) return
    this.#worker = undefined
    const exited = once(worker, 'exit')
    worker.ref() // unreferenced, the process could end before the thread has closed its connection
    worker.postMessage(message)
    await exited
  }

  #start(): Worker {
    const worker = startModuleWorker(this.base, this.name, this.workerData)
    worker.on('message', (reply: Reply) => {
      this.onReply(reply)
      if (this.#pending.size === 0) worker.unref()
    })
    // A thread that dies (it could not open the file, or a bug) fails what it held; the next request starts a new one.
    const fail = (error: Error) => {
      for (const pending of this.#pending.values()) pending.reject(error)
      this.#pending.clear()
      if (this.#worker === worker) this.#worker = undefined
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`the ${this.description} exited (code ${code})`)))
    return worker
  }
}
