import { once } from 'node:events'
import { Worker, type MessagePort } from 'node:worker_threads'
import type { Settled } from './trailing-batches.js'

/**
 * A worker thread running the module at `url`. Run from source it is a .ts file, and a worker thread inherits no
 * loader (not even --import tsx, on Node 20): it registers tsx itself, which makes each thread start slower (every
 * SQLite database of a test starts one). `npm test` builds first and sets WORKERS_FROM_BUILD=1: its threads run the
 * module's build in dist/ instead.
 */
function startModuleWorker(url: URL, workerData: unknown): Worker {
  if (!url.pathname.endsWith('.ts')) return new Worker(url, { workerData })
  // Without the test runner's --import hooks, which are .ts files too.
  if (process.env.WORKERS_FROM_BUILD === '1') return new Worker(builtModule(url), { workerData, execArgv: [] })
  const script = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url.href)}) })`
  return new Worker(script, { eval: true, workerData })
}

/** This checkout's src/ and dist/, from this module's own place in src/ (only asked when run from source). */
const SOURCE_ROOT = new URL('./', import.meta.url)
const BUILD_ROOT = new URL('../dist/', import.meta.url)

/** A module of this checkout's src/, …/name.ts, and its build: dist/…/name.js. */
export function builtModule(source: URL): URL {
  if (!source.href.startsWith(SOURCE_ROOT.href) || !source.href.endsWith('.ts')) throw new Error(`${source.href} is not a module of ${SOURCE_ROOT.href}`)
  return new URL(`${source.href.slice(SOURCE_ROOT.href.length, -'.ts'.length)}.js`, BUILD_ROOT)
}

/** The module named `name` beside `base` (an import.meta.url), with base's extension: .ts from source, .js built. */
export const siblingModule = (base: string, name: string) => new URL(`./${name}${base.slice(base.lastIndexOf('.'))}`, base)

type Reply = { id: number; value: unknown } | { id: number; error: { message: string; code?: string } }

type Asked = { id: number; request: unknown }

/**
 * A worker thread that answers requests by id (serveRequests on its side): started with the first request, started
 * again after it dies, failing the requests it held. Only a request waiting for its answer keeps the process alive.
 * Requests asked in one task cross in one message, and the answers to a group in one: a message costs both threads
 * about as much as a small request's own work. The requests go as that task ends: waiting for the loop's next turn
 * to gather more left the thread idle (docs/benchmarks.md, "The night of 2026-11-27").
 */
export class ThreadRequests<Request extends object> {
  #worker?: Worker
  readonly #pending = new Map<number, { resolve(value: unknown): void; reject(error: unknown): void }>()
  #nextId = 0
  #outbox: Asked[] = []

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
      if (this.#outbox.push({ id, request }) === 1) queueMicrotask(() => this.#send())
    })
  }

  /** Sends what was asked in this task; requests the thread's death has failed meanwhile are not sent. */
  #send(): void {
    const asked = this.#outbox.filter(({ id }) => this.#pending.has(id))
    this.#outbox = []
    if (asked.length > 0) (this.#worker ??= this.#start()).postMessage(asked)
  }

  async close(): Promise<void> {
    this.#send()
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
    worker.on('message', (replies: Reply[]) => {
      for (const reply of replies) {
        const pending = this.#pending.get(reply.id)
        this.#pending.delete(reply.id)
        if (!pending) continue
        // Errors keep their code, which says what they are (isDatabaseUnavailable, isUniqueViolation).
        if ('error' in reply) pending.reject(Object.assign(new Error(reply.error.message), { name: 'SqliteError', code: reply.error.code }))
        else pending.resolve(reply.value)
      }
      if (this.#pending.size === 0) worker.unref()
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

/** A failure as it crosses to the other thread: its message and code, which say what it is. */
export function errorReply(error: unknown): { message: string; code?: string } {
  const { message, code } = error as { message?: unknown; code?: unknown }
  return { message: String(message ?? error), ...(typeof code === 'string' ? { code } : {}) }
}

/**
 * The thread's side of ThreadRequests: the requests that arrived while the thread was busy are handed over together
 * (`answerAll`, one outcome each, in order); the next group waits until this one is answered, so a synchronous
 * database connection is never used by two at once.
 */
export function serveRequests(port: MessagePort, answerAll: (requests: never[]) => Promise<Array<Settled<unknown>>>, close: () => Promise<void>): void {
  let waiting: Array<{ id: number; request: never }> = []
  let closing = false
  let turn: Promise<void> | undefined
  const serve = async () => {
    while (waiting.length > 0) {
      const group = waiting
      waiting = []
      const outcomes = await answerAll(group.map((one) => one.request)).catch((error: unknown) => group.map(() => ({ ok: false as const, error })))
      port.postMessage(
        group.map(({ id }, i): Reply => {
          const outcome = outcomes[i] as Settled<unknown>
          return outcome.ok ? { id, value: outcome.value } : { id, error: errorReply(outcome.error) }
        }),
      )
    }
    turn = undefined
    if (closing) {
      await close()
      port.close()
    }
  }
  port.on('message', (message: Array<{ id: number; request: never }> | { close: true }) => {
    if ('close' in message) closing = true
    else waiting.push(...message)
    // What else has arrived by the next turn of this thread's loop joins the group.
    turn ??= new Promise((resolve) => setImmediate(resolve)).then(serve)
  })
}

/** Each request in turn, each with its own outcome. */
export function oneByOne(answer: (request: never) => unknown): (requests: never[]) => Promise<Array<Settled<unknown>>> {
  return async (requests) => {
    const outcomes: Array<Settled<unknown>> = []
    for (const request of requests) {
      try {
        outcomes.push({ ok: true, value: await answer(request) })
      } catch (error) {
        outcomes.push({ ok: false, error })
      }
    }
    return outcomes
  }
}
