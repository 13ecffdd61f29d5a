import { Agent, request, type Dispatcher } from 'undici'
import { abortAfter } from '../abort-after.js'
import type { AddressPolicy } from '../images/address-policy.js'
import { describeConnectionError, guardedConnector, refusedHostDetail, systemResolver } from '../images/guarded-connector.js'

export interface SendResult {
  /** A 2xx within the timeout. */
  succeeded: boolean
  responseStatus: number | null
  /** Words for the provider's delivery log; null on success. */
  error: string | null
  /** For the service's own log: what the provider is not told (which way a host was refused). */
  logDetail?: string
  durationMs: number
  /** Cut off by the drain: the outcome is unknown, so it is not recorded and is made again once the lease runs out. */
  cancelled: boolean
}

/** Read from an answer only so the connection can be reused; nothing keeps it. */
const RESPONSE_BYTES_READ = 4096

/**
 * The guarded connector applies the address policy to the address actually connected to, on every attempt, so a
 * host name that resolves somewhere forbidden, now or after a DNS change, is never contacted. undici's request
 * follows no redirects. `timeoutMs` bounds the whole attempt, connecting included.
 */
export class WebhookSender {
  readonly #agent: Agent
  readonly #timeoutMs: number

  constructor(options: { policy: AddressPolicy; timeoutMs: number }) {
    this.#timeoutMs = options.timeoutMs
    this.#agent = new Agent({
      connect: guardedConnector(options.policy, systemResolver),
      keepAliveTimeout: 4000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    })
  }

  async send(url: string, headers: Record<string, string>, body: string, cancel: AbortSignal): Promise<SendResult> {
    const started = performance.now()
    const timeout = abortAfter(this.#timeoutMs, cancel)
    const elapsed = () => Math.round(performance.now() - started)
    let response: Dispatcher.ResponseData
    try {
      response = await request(url, { method: 'POST', headers, body, dispatcher: this.#agent, signal: timeout.signal })
    } catch (error) {
      const durationMs = elapsed()
      if (cancel.aborted) return { succeeded: false, responseStatus: null, error: null, durationMs, cancelled: true }
      const why = timeout.timedOut() ? `no answer within ${this.#timeoutMs} ms` : (describeConnectionError(error) ?? 'the request failed')
      return { succeeded: false, responseStatus: null, error: why, logDetail: refusedHostDetail(error), durationMs, cancelled: false }
    } finally {
      // What is left of the answer is bounded by the agent's body timeout.
      timeout.dispose()
    }
    const durationMs = elapsed()
    // The listener keeps an abort's error from crashing the process.
    response.body.on('error', () => {})
    response.body.dump({ limit: RESPONSE_BYTES_READ }).catch(() => {})
    const status = response.statusCode
    if (status >= 200 && status < 300) return { succeeded: true, responseStatus: status, error: null, durationMs, cancelled: false }
    const error = status >= 300 && status < 400 ? `answered ${status}: redirects are not followed` : `answered ${status}`
    return { succeeded: false, responseStatus: status, error, durationMs, cancelled: false }
  }

  close(): Promise<void> {
    return this.#agent.close()
  }
}
