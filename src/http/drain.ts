import { setMaxListeners } from 'node:events'
import type { FastifyInstance } from 'fastify'
import { Problem, sendProblem } from '../errors.js'
import type { ImageCheck } from '../images/check.js'

const shuttingDown = (detail: string) => new Problem('unavailable', detail)

/**
 * docs/operations.md#shutdown-and-drain (SIGTERM/SIGINT: stop accepting, finish in-flight requests, exit 0 within 10 s), as the app
 * sees it. server.ts decides when each step happens; this holds the state the request path reads.
 *
 * Fastify's own answer to requests that reach a closing server is a bare JSON 503, and a request already in
 * flight when close() begins is answered with `Connection: keep-alive`, so its idle connection then holds
 * server.close() open for the whole keep-alive timeout (72 s). Hence `return503OnClosing: false` in app.ts
 * and these hooks: a problem+json 503 for new requests, and `Connection: close` on every response once
 * draining, which ends each keep-alive connection with its last answer.
 */
export class Drain {
  #draining = false
  #waiting = 0
  readonly #cut = new AbortController()

  constructor() {
    // One listener per create waiting on its images (bound() removes it after): 50 concurrent creates are 50, not
    // a leak, and Node's warning past 10 went to stderr under every load test.
    setMaxListeners(0, this.#cut.signal)
  }

  get draining(): boolean {
    return this.#draining
  }

  /** Image checks still under way: the requests a cut would answer 503. */
  get waiting(): number {
    return this.#waiting
  }

  /** From now on new requests are answered 503 and every response closes its connection. */
  start(): void {
    this.#draining = true
  }

  /**
   * The grace is running out: requests still waiting on image probes stop waiting and answer 503. They have
   * stored nothing (images are checked before the insert), so the client may safely retry elsewhere.
   */
  cut(): void {
    this.#cut.abort()
  }

  /** `check`, except that a cut ends its wait with a 503 (the probes themselves end when the prober closes). */
  bound(check: ImageCheck): ImageCheck {
    const cutSignal = this.#cut.signal
    return (images, options) => {
      if (cutSignal.aborted) return Promise.reject(shuttingDown('the service is shutting down; nothing was stored, retry'))
      this.#waiting += 1
      return new Promise<void>((resolve, reject) => {
        const onCut = () => reject(shuttingDown('the service shut down before the images were checked; nothing was stored, retry'))
        cutSignal.addEventListener('abort', onCut, { once: true })
        check(images, options)
          .then(resolve, reject)
          .finally(() => {
            this.#waiting -= 1
            cutSignal.removeEventListener('abort', onCut)
          })
      })
    }
  }
}

/**
 * Root-level hooks. The onRequest hook is added after the one that sets X-Request-Id, so the 503 carries it.
 * GET /healthz keeps answering 200 while the process runs (docs/operations.md#shutdown-and-drain): it says "alive", and the process is,
 * finishing its work; /readyz and everything else answer 503 from the first moment of the drain.
 */
export function addDrainHooks(app: FastifyInstance, drain: Drain): void {
  // Callback hooks, not async ones: they run on every request and almost always only read one boolean, which
  // should not cost a promise each.
  app.addHook('onRequest', (request, reply, done) => {
    if (!drain.draining || request.routeOptions.url === '/healthz') {
      done()
      return
    }
    reply.header('connection', 'close')
    sendProblem(request, reply, shuttingDown('the service is shutting down; retry on another instance'))
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (drain.draining) reply.header('connection', 'close')
    done(null, payload)
  })
}
