import { createHash } from 'node:crypto'
import { encode, type Encoding } from '../http/compression.js'
import { pageJson, type PageListing } from './page-json.js'
import type { ListingsPageData } from './repository.js'

/** A page as sent: its JSON in UTF-8, its ETag, and its bytes compressed once per encoding a client asks for. */
export interface PageBody {
  /** Bytes, not a string: Fastify would encode a string again for every request (a 760 KB page cost ~1 ms). */
  readonly json: Buffer
  readonly etag: string
  encoded(encoding: Encoding): Promise<Buffer>
}

interface Entry extends PageBody {
  industry: string
  /** The body holds from `fromMs` until `untilMs`: no listing on the page changes status in between. */
  fromMs: number
  untilMs: number
}

/**
 * The bodies of pages that many requests share: on SQLite a page is kept until anything is committed, on
 * PostgreSQL identical reads in flight share one query (repository.ts). Each such page is written as JSON,
 * hashed for its ETag and compressed once, not once per request: at 10 listings the text alone was the largest
 * allocation of a page request, and brotli of a 760 KB page (50 × 100 items) costs milliseconds.
 *
 * A page's statuses depend on the time (a listing expires), so a body is kept for the window in which none of its
 * listings changes status, then written again.
 */
export class PageBodies {
  readonly #bodies = new WeakMap<ListingsPageData, Entry>()

  body(page: ListingsPageData, industry: string, nowMs: number): PageBody {
    let entry = this.#bodies.get(page)
    if (!entry || entry.industry !== industry || nowMs < entry.fromMs || nowMs >= entry.untilMs) {
      entry = pageBody(page, industry, nowMs)
      this.#bodies.set(page, entry)
    }
    return entry
  }
}

function pageBody(page: ListingsPageData, industry: string, nowMs: number): Entry {
  const json = Buffer.from(pageJson(page.recordCount, page.listings, industry, nowMs))
  const compressed = new Map<Encoding, Promise<Buffer>>()
  return {
    json,
    // Weak: the same page is sent in three encodings (identity, br, gzip) under one tag, which RFC 9110 allows
    // of a weak validator only. If-None-Match compares weakly, so a 304 works for every encoding.
    etag: `W/"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"`,
    industry,
    ...statusWindow(page.listings, nowMs),
    encoded(encoding) {
      let bytes = compressed.get(encoding)
      if (!bytes) {
        bytes = encode(json, encoding)
        compressed.set(encoding, bytes)
        // A failure is not kept: the next request compresses again.
        bytes.catch(() => compressed.delete(encoding))
      }
      return bytes
    },
  }
}

/** The span around `nowMs` in which no listing of the page reaches its expiry (withdrawn ones never change). */
function statusWindow(listings: readonly PageListing[], nowMs: number): { fromMs: number; untilMs: number } {
  let fromMs = Number.NEGATIVE_INFINITY
  let untilMs = Number.POSITIVE_INFINITY
  for (const listing of listings) {
    if (listing.withdrawn) continue
    const expiresMs = listing.expiresAtUnix * 1000
    if (expiresMs <= nowMs) fromMs = Math.max(fromMs, expiresMs)
    else untilMs = Math.min(untilMs, expiresMs)
  }
  return { fromMs, untilMs }
}
