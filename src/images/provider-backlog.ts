/**
 * How many images each provider's creates are waiting on (IMAGE_QUEUE_PER_PROVIDER): an image counts from the
 * moment its create is admitted until that create's check ends, whatever ends it. A create that would take its
 * provider over the bound is not admitted at all, so a provider cannot pile up work, memory and connections
 * faster than its checks end.
 */
export class ProviderBacklog {
  readonly #waiting = new Map<string, number>()

  constructor(readonly limit: number) {}

  waitingOf(provider: string): number {
    return this.#waiting.get(provider) ?? 0
  }

  /** Counts `images` for `provider` and answers true, or answers false and counts nothing when they do not fit. */
  tryAdd(provider: string, images: number): boolean {
    const waiting = this.waitingOf(provider) + images
    if (waiting > this.limit) return false
    this.#waiting.set(provider, waiting)
    return true
  }

  remove(provider: string, images: number): void {
    const waiting = this.waitingOf(provider) - images
    if (waiting > 0) this.#waiting.set(provider, waiting)
    else this.#waiting.delete(provider)
  }
}
