import { Agent, request, type Dispatcher } from 'undici'
import type { AddressPolicy } from '../images/address-policy.js'
import { describeConnectionError, guardedConnector, refusedHostDetail, systemResolver, type Resolver } from '../images/guarded-connector.js'

/** What one POST to a receiver came to. */
export interface SendResult {
  /** A 2xx within the timeout. */
  succeeded: boolean
  /** The receiver's status, when it answered. */
  responseStatus: number | null
  /** Why it did not succeed, in words for the provider's delivery log; null on success. */
  error: string | null
  /** For the service's own log: what the provider is not told (which way a host was refused). */
  logDetail?: string
  durationMs: number
  /** Cut off by the worker's drain: its outcome is unknown and it is not recorded (the lease runs out, it is made again). */
  cancelled: boolean
}

/** Of a receiver's answer we read this much at most, only so the connection can be reused; nothing keeps it. */
const RESPONSE_BYTES_READ = 4096

/**
 * POSTs webhook deliveries. Every connection goes through the images' guarded connector: the address policy
 * (docs/api.md#images) is applied on every attempt to the address actually connected to, so a host name that resolves
 * somewhere forbidden — now or after a DNS change — is never contacted. Redirects are not followed (undici's
 * request follows none). The whole attempt, connecting included, is bounded by `timeoutMs`.
 */
export class WebhookSender {
  readonly #agent: Agent
  readonly #timeoutMs: number

  constructor(options: { policy: AddressPolicy; timeoutMs: number; resolve?: Resolver }) {
    this.#timeoutMs = options.timeoutMs
    this.#agent = new Agent({
      connect: guardedConnector(options.policy, options.resolve ?? systemResolver),
      keepAliveTimeout: 4000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    })
  }

  async send(url: string, headers: Record<string, string>, body: string, cancel: AbortSignal): Promise<SendResult> {
    const started = performance.now()
    const timeout = AbortSignal.timeout(this.#timeoutMs)
    const elapsed = () => Math.round(performance.now() - started)
    let response: Dispatcher.ResponseData
    try {
      response = await request(url, { method: 'POST', headers, body, dispatcher: this.#agent, signal: AbortSignal.any([timeout, cancel]) })
    } catch (error) {
      const durationMs = elapsed()
      if (cancel.aborted) return { succeeded: false, responseStatus: null, error: null, durationMs, cancelled: true }
      const why = timeout.aborted ? `no answer within ${this.#timeoutMs} ms` : (describeConnectionError(error) ?? 'the request failed')
      return { succeeded: false, responseStatus: null, error: why, logDetail: refusedHostDetail(error), durationMs, cancelled: false }
    }
    const durationMs = elapsed()
    // The listener keeps an abort's error from crashing the process; the body is dropped after a few bytes.
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
