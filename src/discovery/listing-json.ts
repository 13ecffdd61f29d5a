import type { ListingState } from '../listings/listing-state.js'
import { listingView } from '../listings/listing-view.js'
import type { DiscoverPage } from './schemas.js'

/**
 * A discovered listing as the DiscoveredListing schema writes it: the listing as read, with its provider's id.
 * listingView's keys come in the schema's order and it adds none, so JSON.stringify writes what Fastify's
 * serializer would (test/discovery.test.ts validates real pages against the schema).
 */
export function discoveredListingJson(state: ListingState, industry: string, nowMs: number): Buffer {
  const listing: DiscoverPage['data'][number]['listing'] = { ...listingView(state, industry, nowMs), providerId: state.provider_id }
  const text = JSON.stringify(listing)
  // Memory of its own, not a slice of Node's shared 8 KB pool (Buffer.from of a short string): a kept slice
  // would keep its whole slab alive, and the cache's bound counts only the listing's own bytes.
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text))
  bytes.write(text)
  return bytes
}

/**
 * Discovered listings as JSON text, by id and version. A listing in a dense city is on the pages of every
 * consumer near it; reading it whole and writing it again for each page was most of a discovery request (the
 * second query, turning rows into states, the view, the serializer). A listing's text changes only with its
 * version (every change bumps it, docs/api.md#versions-and-entity-tags), and the candidate query reads the version with the conditions
 * that make a listing discoverable, in one statement: text found here under that version is exactly the
 * listing that query saw. Only `active` listings are discovered, and an active listing's view depends on the
 * time only through its status, so a text written at one moment holds at every other while the listing is active.
 * The text also holds the provider's industry, which is set when the provider is created and never changes.
 *
 * Kept as UTF-8 bytes: a page is then copied together, not encoded again (Arabic names make V8 hold a listing's
 * text as two bytes a character, which it encoded at ~2 µs a KB: 6% of a request's time on the event loop).
 * Bounded by bytes (a listing of 100 items is ~20 KB); the oldest entries go first.
 */
export class DiscoveredJsonCache {
  readonly #entries = new Map<string, { version: number; json: Buffer }>()
  #bytes = 0

  constructor(private readonly maxBytes = 32 * 1024 * 1024) {}

  get(id: string, version: number): Buffer | undefined {
    const entry = this.#entries.get(id)
    return entry?.version === version ? entry.json : undefined
  }

  set(id: string, version: number, json: Buffer): void {
    const old = this.#entries.get(id)
    if (old) {
      this.#bytes -= old.json.length
      this.#entries.delete(id)
    }
    this.#entries.set(id, { version, json })
    this.#bytes += json.length
    for (const [oldestId, oldest] of this.#entries) {
      if (this.#bytes <= this.maxBytes) break
      this.#entries.delete(oldestId)
      this.#bytes -= oldest.json.length
    }
  }
}
