/** At most `capacity` values, each kept at most `ttlMs`, least recently used evicted first (a Map keeps insertion order). */
export class TtlCache<V> {
  readonly #entries = new Map<string, { value: V; expiresAtMs: number }>()

  constructor(
    private readonly capacity: number,
    private readonly ttlMs: number,
  ) {}

  get(key: string, nowMs: number): V | undefined {
    const entry = this.#entries.get(key)
    if (!entry) return undefined
    this.#entries.delete(key)
    if (entry.expiresAtMs <= nowMs) return undefined
    this.#entries.set(key, entry)
    return entry.value
  }

  set(key: string, value: V, nowMs: number): void {
    this.#entries.delete(key)
    this.#entries.set(key, { value, expiresAtMs: nowMs + this.ttlMs })
    if (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value as string)
  }
}
