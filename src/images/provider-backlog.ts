/**
 * How many images each provider's creates wait on (IMAGE_QUEUE_PER_PROVIDER), from admission until the check
 * ends. A create that would go over is not admitted, so no provider piles up work faster than its checks end.
 */
export class ProviderBacklog {
  readonly #waiting = new Map<string, number>()

  constructor(readonly limit: number) {}

  waitingOf(provider: string): number {
    return this.#waiting.get(provider) ?? 0
  }

  /** Counts `images` for `provider`, or answers false and counts nothing when they do not fit. */
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
