import { LRUCache } from 'lru-cache'
import { Agent, request, type Dispatcher } from 'undici'
import { systemClock, type Clock } from '../clock.js'
import { abortAfter } from '../abort-after.js'
import { Problem } from '../errors.js'
import type { AddressPolicy } from './address-policy.js'
import type { ImageCheck, ImageRef } from './check.js'
import { describeConnectionError, guardedConnector, refusedHostDetail, systemResolver, type Resolver } from './guarded-connector.js'
import { ACCEPTED_FORMATS, describeContent, sniffImageFormat, SNIFF_BYTES, type ImageFormat } from './sniff.js'
import { FairSlots } from './fair-slots.js'
import { ProviderBacklog, type Refusal } from './provider-backlog.js'
import { SharedProbe } from './shared-probe.js'

export type ProbeFailureType = 'image-unavailable' | 'image-too-large' | 'unsupported-image-format'

export type ProbeResult = { ok: true; format: ImageFormat; bytes: number } | { ok: false; type: ProbeFailureType; detail: string }

export type ProbeOutcome = 'ok' | ProbeFailureType

/** What the prober tells the metrics. */
export interface ProbeObserver {
  /** An image was fetched and judged; `seconds` excludes the wait for a slot. */
  probed(outcome: ProbeOutcome, seconds: number): void
  /** Verdicts given without fetching: from the cache, or by joining a fetch of the URL under way. */
  reused(source: 'cache' | 'in-flight', count?: number): void
}

/** Image work under way: creates waiting on their checks, probes fetching, probes waiting for a slot. */
export interface ImageWork {
  checks: number
  running: number
  waiting: number
}

export interface ImageProberOptions {
  /** IMAGE_MAX_BYTES, inclusive. */
  maxBytes: number
  /** IMAGE_FETCH_TIMEOUT_MS: the budget of one image, and of a create's whole wait for its images. */
  timeoutMs: number
  policy: AddressPolicy
  resolve?: Resolver
  clock?: Clock
  perRequestConcurrency?: number
  /** Shared fairly between providers. */
  processConcurrency?: number
  /** IMAGE_QUEUE_PER_PROVIDER, a bound on top of the budget's; none: the budget's only. */
  queuePerProvider?: number
  observer?: ProbeObserver
  /** For the service's log: which way a host was refused, which the caller is not told. */
  onRefusedHost?: (detail: string) => void
}

const MAX_REDIRECTS = 3
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])
/** The first request asks for this much: enough to sniff, and a 206 tells the total size. */
const RANGE_BYTES = 4096
/** Kept from the start of a body, to name what a refused resource is. */
const HEAD_BYTES = 512
const CACHE_TTL_MS = 10 * 60 * 1000
const CACHE_ENTRIES = 10_000

/** Ends a probe with a verdict; thrown inside, returned as a ProbeResult. */
class ProbeFailure extends Error {
  constructor(
    readonly type: ProbeFailureType,
    readonly detail: string,
  ) {
    super(detail)
  }
}

const unavailable = (detail: string) => new ProbeFailure('image-unavailable', detail)

/** Stops a body we will not read further; the listener keeps the abort's error from crashing the process. */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => {})
  body.destroy()
}

function header(response: Dispatcher.ResponseData, name: string): string | undefined {
  const value = response.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** "bytes 0-4095/6291456" → 6291456; undefined when the total is unknown ("/*") or malformed. */
function contentRangeTotal(value: string | undefined): number | undefined {
  const match = value === undefined ? null : /^bytes\s+\d+-\d+\/(\d+)$/i.exec(value.trim())
  return match ? Number(match[1]) : undefined
}

/**
 * Judges images by what they are: format by their first bytes, size by their full length, never by headers alone.
 * Callers choose the URLs, so every connection, redirects included, goes through guardedConnector, every body is
 * read with a byte cap, and each create's wait has one deadline. Callers also choose how many and how slow: fetches
 * are shared fairly between providers, each provider's backlog is bounded, and no fetch outlives its last waiter.
 */
export class ImageProber {
  readonly #options: ImageProberOptions & Required<Pick<ImageProberOptions, 'clock' | 'perRequestConcurrency'>>
  readonly #agent: Agent
  readonly #processSlots: FairSlots
  readonly #backlog: ProviderBacklog
  readonly #cache: LRUCache<string, ProbeResult & { ok: true }>
  /** Probes under way or waiting for a slot, so concurrent creates naming one URL share one fetch. */
  readonly #inFlight = new Map<string, SharedProbe>()
  #checks = 0

  constructor(options: ImageProberOptions) {
    this.#options = { ...options, clock: options.clock ?? systemClock, perRequestConcurrency: options.perRequestConcurrency ?? 8 }
    // Entries dated by the injected clock, read afresh each time (ttlResolution 0: no timer per read).
    this.#cache = new LRUCache({ max: CACHE_ENTRIES, ttl: CACHE_TTL_MS, ttlResolution: 0, perf: { now: this.#options.clock } })
    this.#agent = new Agent({
      connect: guardedConnector(options.policy, options.resolve ?? systemResolver),
      keepAliveTimeout: 4000,
    })
    this.#processSlots = new FairSlots(options.processConcurrency ?? 64)
    this.#backlog = new ProviderBacklog({
      budgetMs: options.timeoutMs,
      limit: options.queuePerProvider ?? Infinity,
      slotsPerProvider: this.#processSlots.perOwner,
      perCreate: this.#options.perRequestConcurrency,
    })
  }

  /**
   * Each distinct URL probed once, a few at a time, within one deadline. The first failing image in document
   * order sets the status and errors[] names every failing one; an image not judged in time has failed.
   */
  readonly check: ImageCheck = async (images, options = { provider: '' }) => {
    if (this.#allCached(images)) return
    const { provider } = options
    const signal = options.clientGone?.()
    const urls = [...new Set(images.map(({ url }) => url))]
    const waiting = urls.filter((url) => !this.#cache.get(url)).length
    const refusal = this.#backlog.tryAdd(provider, waiting)
    if (refusal) throw this.#refused(refusal)
    const deadline = abortAfter(this.#options.timeoutMs, signal)
    const joined: Array<() => void> = []
    this.#checks += 1
    try {
      const results = await this.#judgeAll(urls, provider, deadline.signal, joined)
      const notJudged = signal?.aborted ? 'not checked: the client closed the connection first' : `not checked within ${this.#options.timeoutMs} ms`
      const failures: Array<{ pointer: string; type: ProbeFailureType; detail: string }> = []
      for (const { pointer, url } of images) {
        const result = results.get(url) ?? { ok: false, type: 'image-unavailable', detail: notJudged }
        if (!result.ok) failures.push({ pointer, type: result.type, detail: result.detail })
      }
      const [first] = failures
      if (!first) return
      throw new Problem(first.type, failures.length === 1 ? first.detail : `${failures.length} images were not accepted`, {
        errors: failures.map(({ pointer, detail }) => ({ pointer, detail })),
      })
    } finally {
      deadline.dispose()
      for (const leave of joined) leave()
      this.#backlog.remove(provider, waiting)
      this.#checks -= 1
    }
  }

  work(): ImageWork {
    return { checks: this.#checks, running: this.#processSlots.running, waiting: this.#processSlots.waiting }
  }

  /** Verdicts of `urls`, perRequestConcurrency at a time, until all are in or `stop` aborts. Pushes each probe's leave() on `joined`. */
  #judgeAll(urls: string[], provider: string, stop: AbortSignal, joined: Array<() => void>): Promise<Map<string, ProbeResult>> {
    const results = new Map<string, ProbeResult>()
    if (stop.aborted) return Promise.resolve(results)
    return new Promise((resolve) => {
      let next = 0
      let running = 0
      const finish = () => {
        stop.removeEventListener('abort', finish)
        // A copy: later verdicts must not change the answer being written.
        resolve(new Map(results))
      }
      const startMore = () => {
        while (running < this.#options.perRequestConcurrency && next < urls.length) {
          const url = urls[next++] as string
          running += 1
          const probe = this.#join(url, provider)
          joined.push(probe.leave)
          void probe.result.then((result) => {
            if (stop.aborted) return
            running -= 1
            results.set(url, result)
            if (results.size === urls.length) finish()
            else startMore()
          })
        }
      }
      stop.addEventListener('abort', finish, { once: true })
      startMore()
    })
  }

  #refused(refusal: Refusal): Problem {
    // Every check under way ends by its deadline, so by then the provider's backlog is empty.
    const seconds = Math.max(1, Math.ceil(this.#options.timeoutMs / 1000))
    const why =
      refusal.reason === 'limit'
        ? `your creates already wait on ${refusal.waiting} images to be checked, and at most ${refusal.limit} may wait at once`
        : `your images take about ${Math.round(refusal.perImageMs)} ms each to check and ${refusal.checks} of your creates already wait on theirs: ` +
          `these ${refusal.images}, about ${Math.floor(refusal.atOnce)} at a time, would not be checked within ${this.#options.timeoutMs} ms`
    return new Problem('rate-limited', `${why}; retry after ${seconds} seconds`, { headers: { 'retry-after': String(seconds) } })
  }

  /** Whether every image was accepted recently (a provider's usual images): answered without a probe, slot or promise per image. */
  #allCached(images: ImageRef[]): boolean {
    const distinct = new Set<string>()
    for (const { url } of images) {
      if (!this.#cache.get(url)) return false
      distinct.add(url)
    }
    this.#options.observer?.reused('cache', distinct.size)
    return true
  }

  /** One image's verdict, for a caller that never goes away. */
  probe(url: string): Promise<ProbeResult> {
    return this.#join(url, '').result
  }

  /** A verdict on `url`: from the cache, the probe under way, or a new probe in `provider`'s line. leave() when no longer waiting. */
  #join(url: string, provider: string): { result: Promise<ProbeResult>; leave: () => void } {
    const cached = this.#cache.get(url)
    if (cached) {
      this.#options.observer?.reused('cache')
      return { result: Promise.resolve(cached), leave: () => {} }
    }
    let probe = this.#inFlight.get(url)
    if (probe) {
      this.#options.observer?.reused('in-flight')
    } else {
      const started = (probe = new SharedProbe(this.#processSlots, (cancelled, slotOwner) => {
        const ended = this.#backlog.fetchStarted(slotOwner)
        return this.#timedProbe(url, cancelled).finally(ended)
      }))
      this.#inFlight.set(url, started)
      void started.result.then(() => this.#forget(url, started))
    }
    probe.join(provider)
    const leave = () => {
      // No one waits for it: a later request for the URL starts afresh.
      if (probe.leave()) this.#forget(url, probe)
    }
    return { result: probe.result, leave }
  }

  #forget(url: string, probe: SharedProbe): void {
    if (this.#inFlight.get(url) === probe) this.#inFlight.delete(url)
  }

  /** On close every request has been answered: probes still running are aborted, not waited for. */
  async close(): Promise<void> {
    await this.#agent.destroy()
  }

  async #timedProbe(url: string, cancelled: AbortSignal): Promise<ProbeResult> {
    // Wall time, not the injected clock: the clock dates cache entries, and tests hold it still.
    const started = performance.now()
    const result = await this.#probeOnce(url, cancelled)
    // A cancelled probe judged nothing: it is not counted.
    if (!cancelled.aborted) this.#options.observer?.probed(result.ok ? 'ok' : result.type, (performance.now() - started) / 1000)
    return result
  }

  async #probeOnce(url: string, cancelled: AbortSignal): Promise<ProbeResult> {
    const budget = abortAfter(this.#options.timeoutMs, cancelled)
    try {
      const result = await this.#judge(new URL(url), budget.signal)
      this.#cache.set(url, result)
      return result
    } catch (error) {
      if (error instanceof ProbeFailure) return { ok: false, type: error.type, detail: error.detail }
      return { ok: false, type: 'image-unavailable', detail: this.#describeFetchError(error, budget.timedOut()) }
    } finally {
      budget.dispose()
    }
  }

  async #judge(url: URL, signal: AbortSignal): Promise<ProbeResult & { ok: true }> {
    const first = await this.#get(url, signal, `bytes=0-${RANGE_BYTES - 1}`)
    if (first.response.statusCode === 206) {
      const total = contentRangeTotal(header(first.response, 'content-range'))
      if (total !== undefined && total > this.#options.maxBytes) {
        discard(first.response.body)
        throw this.#tooLarge(total)
      }
      const part = await this.#read(first.response)
      // The range held the whole image: its size was counted, not claimed. Otherwise fetch it whole and count.
      if (total !== undefined && part.bytes === total) return part
      const whole = await this.#get(first.url, signal)
      return this.#read(this.#expectOk(whole.response))
    }
    return this.#read(this.#expectOk(first.response))
  }

  #expectOk(response: Dispatcher.ResponseData): Dispatcher.ResponseData {
    if (response.statusCode >= 200 && response.statusCode < 300) return response
    discard(response.body)
    throw unavailable(`the server answered HTTP ${response.statusCode}`)
  }

  /** GET, following at most MAX_REDIRECTS redirects, each hop checked like the first. */
  async #get(start: URL, signal: AbortSignal, range?: string): Promise<{ url: URL; response: Dispatcher.ResponseData }> {
    let url = start
    for (let hop = 0; ; hop++) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw unavailable(`redirected to a ${url.protocol} URL`)
      if (url.username !== '' || url.password !== '') throw unavailable('URLs with credentials are not fetched')
      const response = await request(url, {
        dispatcher: this.#agent,
        method: 'GET',
        signal,
        headers: {
          accept: 'image/jpeg, image/png, image/gif, image/webp',
          'accept-encoding': 'identity',
          'user-agent': 'listing-service-image-check/1',
          ...(range ? { range } : {}),
        },
      })
      if (!REDIRECT_STATUSES.has(response.statusCode)) return { url, response }
      discard(response.body)
      const location = header(response, 'location')
      if (location === undefined) throw unavailable(`the server answered HTTP ${response.statusCode} without a Location`)
      if (hop === MAX_REDIRECTS) throw unavailable(`more than ${MAX_REDIRECTS} redirects`)
      url = new URL(location, url)
    }
  }

  /** Reads at most maxBytes + 1 bytes of a body, and stops at the first bytes when they are not an accepted image. */
  async #read(response: Dispatcher.ResponseData): Promise<ProbeResult & { ok: true }> {
    const { maxBytes } = this.#options
    const declared = Number(header(response, 'content-length'))
    if (Number.isFinite(declared) && declared > maxBytes) {
      discard(response.body)
      throw this.#tooLarge(declared)
    }
    const head: Buffer[] = []
    let headLength = 0
    let bytes = 0
    let format: ImageFormat | undefined
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      if (headLength < HEAD_BYTES) {
        head.push(chunk.subarray(0, HEAD_BYTES - headLength))
        headLength += Math.min(chunk.length, HEAD_BYTES - headLength)
      }
      bytes += chunk.length
      if (format === undefined && headLength >= SNIFF_BYTES) {
        format = sniffImageFormat(Buffer.concat(head))
        if (format === undefined) break
      }
      if (bytes > maxBytes) {
        discard(response.body)
        throw this.#tooLarge(undefined)
      }
    }
    format ??= sniffImageFormat(Buffer.concat(head))
    if (format === undefined) {
      discard(response.body)
      throw new ProbeFailure('unsupported-image-format', `content is ${describeContent(Buffer.concat(head))}; accepted: ${ACCEPTED_FORMATS}`)
    }
    return { ok: true, format, bytes }
  }

  #tooLarge(size: number | undefined): ProbeFailure {
    const { maxBytes } = this.#options
    const MiB = 1024 * 1024
    const limit = maxBytes % MiB === 0 ? `${maxBytes / MiB} MiB` : `${maxBytes} bytes`
    const detail = size === undefined ? `image is larger than ${limit}, the limit` : `image is ${(size / 1_000_000).toFixed(1)} MB; the limit is ${limit}`
    return new ProbeFailure('image-too-large', detail)
  }

  #describeFetchError(error: unknown, timedOut: boolean): string {
    if (timedOut) return `no complete answer within ${this.#options.timeoutMs} ms`
    const refused = refusedHostDetail(error)
    if (refused !== undefined) {
      this.#options.onRefusedHost?.(refused)
      return `${describeConnectionError(error)}; images must be on the public internet`
    }
    return describeConnectionError(error) ?? 'the image could not be fetched'
  }
}
