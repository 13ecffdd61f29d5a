/**
 * Listings as JSON bytes, by id and version: the one cache of the service (docs/design/0016-representations-by-version.md).
 *
 * What a listing shows changes only with a new version: every change is one, an expiry from the moment it happens
 * (statusAndVersion), and the provider's industry, the one thing read from elsewhere, never changes. So an entry is
 * never stale, nothing invalidates it, and a reader that asks by the version it read gets exactly that listing.
 * Two forms of one listing at one version: whole, as discovery sends it (UTF-8 bytes, copied into its page rather
 * than encoded again), and as an entry of its provider's pages (JSON text, record 23). One version per
 * listing (a newer one replaces it); bounded by bytes, the oldest kept go first (record 25).
 */
/** A listing's bytes at a version, and its items' quantities at it (what discovery's `available` starts from). */
export interface Representation {
  version: number
  bytes: Buffer
  quantities: number[]
}

/** What is kept of one listing, at one version. */
interface Kept {
  version: number
  whole?: Representation
  /** A string, not bytes: pages read at random make entries at every request, and a buffer of its own each cost
   * allocation and garbage collection of memory outside the heap (record 23). */
  pageEntry?: string
}

export class Representations {
  readonly #entries = new Map<string, Kept>()
  #bytes = 0

  constructor(private readonly maxBytes: number) {}

  /** (id, version) whole, if kept. */
  get(id: string, version: number): Representation | undefined {
    return this.#at(id, version)?.whole
  }

  /** (id, version) whole, made from `make` the first time (or again, once it has been let go). */
  of(id: string, version: number, make: () => { items: ReadonlyArray<{ quantity: number }> }): Representation {
    const found = this.get(id, version)
    if (found) return found
    const view = make()
    const whole = { version, bytes: ownBytes(JSON.stringify(view)), quantities: view.items.map((item) => item.quantity) }
    this.#keep(id, version, whole.bytes.length).whole = whole
    return whole
  }

  /** (id, version) as an entry of its provider's pages (JSON), made from `make` the first time. */
  pageEntry(id: string, version: number, make: () => unknown): string {
    const found = this.#at(id, version)?.pageEntry
    if (found !== undefined) return found
    const text = JSON.stringify(make())
    this.#keep(id, version, text.length).pageEntry = text
    return text
  }

  #at(id: string, version: number): Kept | undefined {
    const kept = this.#entries.get(id)
    return kept?.version === version ? kept : undefined
  }

  /**
   * The listing's entry at `version` (another version's goes), `bytes` more to be kept in it. Over the bound, the
   * oldest go until an eighth of it is free, not one per keep: a Map walked from its start steps over a slot of every
   * entry deleted since its table was last rebuilt, so letting one go at each keep walked thousands of them each time.
   */
  #keep(id: string, version: number, bytes: number): Kept {
    let kept = this.#at(id, version)
    if (!kept) {
      const old = this.#entries.get(id)
      if (old) {
        this.#entries.delete(id)
        this.#bytes -= sizeOf(old)
      }
      kept = { version }
      this.#entries.set(id, kept)
    }
    this.#bytes += bytes
    if (this.#bytes <= this.maxBytes) return kept
    const enough = this.maxBytes * (7 / 8)
    for (const [oldId, oldest] of this.#entries) {
      if (this.#bytes <= enough) break
      if (oldest === kept) continue
      this.#entries.delete(oldId)
      this.#bytes -= sizeOf(oldest)
    }
    return kept
  }
}

/** Bytes, and a page entry's characters: UTF-16 takes at least as many bytes as UTF-8 for them, so it is no worse a bound. */
const sizeOf = (kept: Kept) => (kept.whole?.bytes.length ?? 0) + (kept.pageEntry?.length ?? 0)

/** Memory of its own: a slice of Node's shared pool (Buffer.from of a short text) would keep the whole slab alive. */
function ownBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
  bytes.write(text)
  return bytes
}
