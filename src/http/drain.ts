import { setMaxListeners } from 'node:events'
import type { FastifyInstance } from 'fastify'
import { Problem, sendProblem } from '../errors.js'
import type { ImageCheck } from '../images/check.js'

/**
 * Fastify's own draining answers a bare JSON 503 and keeps connections alive, holding server.close() open for the
 * keep-alive timeout: hence a problem+json 503 and `Connection: close` on every response once draining.
 */
export class Drain {
  #draining = false
  #waiting = 0
  readonly #cut = new AbortController()

  constructor() {
    // One listener per create waiting on its images, removed after: many at once is load, not a leak.
    setMaxListeners(0, this.#cut.signal)
  }

  get draining(): boolean {
    return this.#draining
  }

  /** Image checks under way: the requests a cut would answer 503. */
  get waiting(): number {
    return this.#waiting
  }

  /** From now on new requests are answered 503 and every response closes its connection. */
  start(): void {
    this.#draining = true
  }

  /** The grace is running out: requests waiting on images answer 503. They stored nothing, so a retry is safe. */
  cut(): void {
    this.#cut.abort()
  }

  /** `check`, except that a cut ends its wait with a 503. */
  bound(check: ImageCheck): ImageCheck {
    const cutSignal = this.#cut.signal
    return (images, options) => {
      if (cutSignal.aborted) return Promise.reject(new Problem('unavailable', 'the service is shutting down; nothing was stored, retry'))
      this.#waiting += 1
      return new Promise<void>((resolve, reject) => {
        const onCut = () => reject(new Problem('unavailable', 'the service shut down before the images were checked; nothing was stored, retry'))
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
 * Register at the root, after the X-Request-Id hook. /healthz still answers while draining: the process is alive.
 * Callback hooks: reading one boolean should not cost a promise.
 */
export function addDrainHooks(app: FastifyInstance, drain: Drain): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (!drain.draining || request.routeOptions.url === '/healthz') {
      done()
      return
    }
    reply.header('connection', 'close')
    sendProblem(request, reply, new Problem('unavailable', 'the service is shutting down; retry on another instance'))
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (drain.draining) reply.header('connection', 'close')
    done(null, payload)
  })
}
