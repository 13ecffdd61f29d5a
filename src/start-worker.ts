import { once } from 'node:events'
import { Worker, type MessagePort } from 'node:worker_threads'

/**
 * A worker thread running the module at `url`. Run from source it is a .ts file, and a worker thread inherits no
 * loader (not even --import tsx, on Node 20): it registers tsx itself.
 */
function startModuleWorker(url: URL, workerData: unknown): Worker {
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { workerData })
  const script = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url.href)}) })`
  return new Worker(script, { eval: true, workerData })
}

/** The module named `name` beside `base` (an import.meta.url), with base's extension: .ts from source, .js built. */
export const siblingModule = (base: string, name: string) => new URL(`./${name}${base.slice(base.lastIndexOf('.'))}`, base)

type Reply = { id: number; value: unknown } | { id: number; error: { message: string; code?: string } }

/**
 * A worker thread that answers requests by id (serveRequests on its side): started with the first request, started
 * again after it dies, failing the requests it held. Only a request waiting for its answer keeps the process alive.
 */
export class ThreadRequests<Request extends object> {
  #worker?: Worker
  readonly #pending = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>()
  #nextId = 0

  constructor(
    private readonly url: URL,
    private readonly workerData: unknown,
  ) {}

  ask(request: Request): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const worker = (this.#worker ??= this.#start())
      const id = ++this.#nextId
      this.#pending.set(id, { resolve, reject })
      worker.ref()
      worker.postMessage({ id, request })
    })
  }

  async close(): Promise<void> {
    const worker = this.#worker
    if (!worker) return
    this.#worker = undefined
    const exited = once(worker, 'exit')
    worker.ref() // unreferenced, the process could end before the thread has closed its connection
    worker.postMessage({ close: true })
    await exited
  }

  #start(): Worker {
    const worker = startModuleWorker(this.url, this.workerData)
    worker.on('message', (reply: Reply) => {
      const pending = this.#pending.get(reply.id)
      this.#pending.delete(reply.id)
      if (this.#pending.size === 0) worker.unref()
      if (!pending) return
      // Errors keep their code, which says what they are (isDatabaseUnavailable, isUniqueViolation).
      if ('error' in reply) pending.reject(Object.assign(new Error(reply.error.message), { name: 'SqliteError', code: reply.error.code }))
      else pending.resolve(reply.value)
    })
    const fail = (error: Error) => {
      for (const pending of this.#pending.values()) pending.reject(error)
      this.#pending.clear()
      if (this.#worker === worker) this.#worker = undefined
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`the worker thread ${this.url.pathname} exited (code ${code})`)))
    return worker
  }
}

/**
 * The thread's side of ThreadRequests: each request answered in turn, the next only once the one before is, so a
 * synchronous database connection is never used by two at once.
 */
export function serveRequests(port: MessagePort, answer: (request: never) => unknown, close: () => Promise<void>): void {
  let turn: Promise<unknown> = Promise.resolve()
  port.on('message', (message: { id: number; request: never } | { close: true }) => {
    turn = turn.then(async () => {
      if ('close' in message) {
        await close()
        port.close()
        return
      }
      let reply: Reply
      try {
        reply = { id: message.id, value: await answer(message.request) }
      } catch (error) {
        const { message: text, code } = error as { message?: unknown; code?: unknown }
        reply = { id: message.id, error: { message: String(text ?? error), ...(typeof code === 'string' ? { code } : {}) } }
      }
      port.postMessage(reply)
    })
  })
}
