/**
 * Listings as JSON bytes, by id and version: the one cache of the service (docs/design/0016-representations-by-version.md).
 *
 * What a listing shows changes only with a new version: every change is one, an expiry from the moment it happens
 * (statusAndVersion), and the provider's industry, the one thing read from elsewhere, never changes. So an entry is
 * never stale, nothing invalidates it, and a reader that asks by the version it read gets exactly that listing.
 * Kept as UTF-8 bytes so a page is copied together rather than encoded again. One version per listing (a newer one
 * replaces it); bounded by bytes, the oldest kept go first.
 */
export class Representations {
  readonly #entries = new Map<string, { version: number; bytes: Buffer }>()
  #bytes = 0

  constructor(private readonly maxBytes: number) {}

  /** The bytes of (id, version), if kept. */
  get(id: string, version: number): Buffer | undefined {
    const found = this.#entries.get(id)
    return found?.version === version ? found.bytes : undefined
  }

  /** The bytes of (id, version), made from `make` the first time (or again, once they have been let go). */
  of(id: string, version: number, make: () => unknown): Buffer {
    const found = this.get(id, version)
    if (found) return found
    const text = JSON.stringify(make())
    // Memory of its own: a slice of Node's shared pool (Buffer.from of a short text) would keep the whole slab alive.
    const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
    bytes.write(text)
    const old = this.#entries.get(id)
    if (old) {
      this.#entries.delete(id)
      this.#bytes -= old.bytes.length
    }
    this.#entries.set(id, { version, bytes })
    this.#bytes += bytes.length
    for (const [oldId, oldest] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break
      this.#entries.delete(oldId)
      this.#bytes -= oldest.bytes.length
    }
    return bytes
  }
}
