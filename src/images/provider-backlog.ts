export interface BacklogOptions {
  /** IMAGE_FETCH_TIMEOUT_MS: a create's whole wait for its images. */
  budgetMs: number
  /** IMAGE_QUEUE_PER_PROVIDER: most images one provider's creates may wait on, whatever the estimate says. */
  limit: number
  /** Fetches one provider may hold at once (FairSlots.perOwner). */
  slotsPerProvider: number
  /** Fetches one create runs at once. */
  perCreate: number
  /** Monotonic milliseconds. */
  now?: () => number
}

/** Why a create was not admitted, with what the problem's detail says. */
export type Refusal =
  | { reason: 'limit'; waiting: number; limit: number }
  | { reason: 'budget'; checks: number; images: number; expectedMs: number; perImageMs: number; atOnce: number }

/** Each ended fetch weighs this much less than the next: the estimate follows about the last 64. */
const KEEP = 1 - 1 / 64

interface Line {
  /** Images of admitted creates, from admission until the create's check ends. */
  waiting: number
  /** Admitted creates whose check has not ended. */
  checks: number
  /** Fetches holding a slot now, and the sum of their start times (their ages are count × now − sum). */
  running: number
  startedSum: number
  /** Fetches ended since the provider's line was last empty, and how long they held their slots; both decay, so
   * that the recent ones weigh most. */
  ended: number
  endedMs: number
}

/**
 * Each provider's waiting images, and whether one more create's images can be checked within the budget. Its wait
 * is estimated from the provider's own fetches: its images, as many at once as its share of the provider's slots
 * beside the creates already waiting, each taking what the provider's fetches have taken (those still running
 * count with their age so far, so images that never answer raise the estimate before they end). A create that
 * cannot be served in time is refused at once rather than admitted to fail at its deadline; a burst of images that
 * answer at once is admitted whole. The estimate starts afresh when a provider has nothing under way, and `limit`
 * bounds the waiting images whatever it says.
 */
export class ProviderBacklog {
  readonly #lines = new Map<string, Line>()
  readonly #options: Required<BacklogOptions>

  constructor(options: BacklogOptions) {
    this.#options = { now: () => performance.now(), ...options }
  }

  /** Counts `images` for `provider` and answers undefined, or counts nothing and answers why not. */
  tryAdd(provider: string, images: number): Refusal | undefined {
    const { limit, budgetMs, slotsPerProvider, perCreate } = this.#options
    const line = this.#lines.get(provider) ?? { waiting: 0, checks: 0, running: 0, startedSum: 0, ended: 0, endedMs: 0 }
    if (line.waiting + images > limit) return { reason: 'limit', waiting: line.waiting, limit }
    const perImageMs = this.#perImageMs(line)
    // The provider's slots go round its creates (each takes its line's place again as a fetch ends).
    const atOnce = Math.min(perCreate, Math.max(1, slotsPerProvider / (line.checks + 1)))
    const expectedMs = Math.ceil(images / atOnce) * perImageMs
    if (expectedMs > budgetMs) return { reason: 'budget', checks: line.checks, images, expectedMs, perImageMs, atOnce }
    line.waiting += images
    line.checks += 1
    this.#lines.set(provider, line)
    return undefined
  }

  /** The end of a check admitted with `images`. */
  remove(provider: string, images: number): void {
    const line = this.#lines.get(provider)
    if (!line) return
    line.waiting -= images
    line.checks -= 1
    this.#forgetIfIdle(provider, line)
  }

  /** A fetch counted for `provider` took a slot; the answer is called once it gives the slot up. */
  fetchStarted(provider: string): () => void {
    const line = this.#lines.get(provider)
    // A fetch outside any admitted check (ImageProber.probe) is not estimated.
    if (!line) return () => {}
    const startedAt = this.#options.now()
    line.running += 1
    line.startedSum += startedAt
    return () => {
      line.running -= 1
      line.startedSum -= startedAt
      line.ended = line.ended * KEEP + 1
      line.endedMs = line.endedMs * KEEP + (this.#options.now() - startedAt)
      this.#forgetIfIdle(provider, line)
    }
  }

  /** Mean time a fetch of the provider holds its slot: ended ones as they took, running ones as long as so far. */
  #perImageMs(line: Line): number {
    const count = line.ended + line.running
    if (count === 0) return 0
    const runningMs = line.running * this.#options.now() - line.startedSum
    return (line.endedMs + runningMs) / count
  }

  #forgetIfIdle(provider: string, line: Line): void {
    if (line.checks === 0 && line.running === 0 && this.#lines.get(provider) === line) this.#lines.delete(provider)
  }
}
