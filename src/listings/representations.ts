/**
 * Listings as JSON bytes, by id and version: the one cache of the service (docs/design/0016-representations-by-version.md).
 *
 * What a listing shows changes only with a new version: every change is one, an expiry from the moment it happens
 * (statusAndVersion), and the provider's industry, the one thing read from elsewhere, never changes. So an entry is
 * never stale, nothing invalidates it, and a reader that asks by the version it read gets exactly that listing.
 * Kept as UTF-8 bytes so a page is copied together rather than encoded again. One version per listing (a newer one
 * replaces it); bounded by bytes, the oldest kept go first.
 */
/** A listing's bytes at a version, and its items' quantities at it (what discovery's `available` starts from). */
export interface Representation {
  version: number
  bytes: Buffer
  quantities: number[]
}

export class Representations {
  readonly #entries = new Map<string, Representation>()
  #bytes = 0

  constructor(private readonly maxBytes: number) {}

  /** (id, version), if kept. */
  get(id: string, version: number): Representation | undefined {
    const found = this.#entries.get(id)
    return found?.version === version ? found : undefined
  }

  /** (id, version), made from `make` the first time (or again, once it has been let go). */
  of(id: string, version: number, make: () => { items: ReadonlyArray<{ quantity: number }> }): Representation {
    const found = this.get(id, version)
    if (found) return found
    const view = make()
    const text = JSON.stringify(view)
    // Memory of its own: a slice of Node's shared pool (Buffer.from of a short text) would keep the whole slab alive.
    const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
    bytes.write(text)
    const old = this.#entries.get(id)
    if (old) {
      this.#entries.delete(id)
      this.#bytes -= old.bytes.length
    }
    const entry = { version, bytes, quantities: view.items.map((item) => item.quantity) }
    this.#entries.set(id, entry)
    this.#bytes += bytes.length
    for (const [oldId, oldest] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break
      this.#entries.delete(oldId)
      this.#bytes -= oldest.bytes.length
    }
    return entry
  }
}
