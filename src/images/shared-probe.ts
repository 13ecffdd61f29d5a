import type { FairSlots, GiveUp } from './fair-slots.js'
import type { ProbeResult } from './prober.js'

/** What a probe no one waits for resolves with; no caller reads it. */
const CANCELLED: ProbeResult = { ok: false, type: 'image-unavailable', detail: 'cancelled: no request waits for it' }

/** A place in one provider's line; `giveUp` is set once take() has returned. */
interface Place {
  giveUp?: GiveUp
}

/**
 * One probe of a URL and the requests waiting for its verdict. It waits in the line of every provider waiting
 * for it and runs on the first slot granted, so a provider naming another's image URL cannot hold that provider's
 * create behind its own long line. It ends when judged, or when its last waiter leaves (its fetch then aborted).
 */
export class SharedProbe {
  readonly result: Promise<ProbeResult>
  #resolve!: (verdict: ProbeResult) => void
  #state: 'waiting' | 'running' | 'done' = 'waiting'
  #waiters = 0
  readonly #places = new Map<string, Place>()
  /** The place whose slot it runs on. */
  #slot: Place | undefined
  readonly #cancel = new AbortController()

  constructor(
    private readonly slots: FairSlots,
    /** Fetches and judges on a slot of `slotOwner`; `cancelled` aborts when no one waits any more. */
    private readonly run: (cancelled: AbortSignal, slotOwner: string) => Promise<ProbeResult>,
  ) {
    this.result = new Promise((resolve) => (this.#resolve = resolve))
  }

  /** A request of `provider` waits for the verdict until leave(). */
  join(provider: string): void {
    this.#waiters += 1
    if (this.#state !== 'waiting' || this.#places.has(provider)) return
    const place: Place = {}
    // take() may grant at once, calling #start before it returns.
    this.#places.set(provider, place)
    place.giveUp = this.slots.take(provider, () => this.#start(provider, place))
  }

  /** True when no waiter is left: the probe has then ended, cancelled unless already judged. */
  leave(): boolean {
    this.#waiters -= 1
    if (this.#waiters > 0) return false
    if (this.#state !== 'done') {
      this.#cancel.abort()
      this.#finish(CANCELLED)
    }
    return true
  }

  #start(provider: string, place: Place): void {
    this.#state = 'running'
    this.#slot = place
    this.#places.delete(provider)
    this.#leaveLines()
    void this.run(this.#cancel.signal, provider).then((verdict) => this.#finish(verdict))
  }

  #finish(verdict: ProbeResult): void {
    if (this.#state === 'done') return
    this.#state = 'done'
    this.#leaveLines()
    this.#slot?.giveUp?.()
    this.#resolve(verdict)
  }

  #leaveLines(): void {
    for (const place of this.#places.values()) place.giveUp?.()
    this.#places.clear()
  }
}
