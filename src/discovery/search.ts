import type { CursorKey } from './cursor.js'
import { greatCircleMeters } from './sphere.js'
import type { ActiveFilter, CandidateRow, QueryArea } from './spatial-index.js'

/*
 * The index hands over candidates, the exact distance decides, and the order is made here rather than by an ORDER BY
 * over every match, far more than a page in a dense city: nearest-first widens a small circle until it holds more than
 * `limit` (every listing outside is farther than every one inside); ending-soonest lengthens a window of expiry alike.
 */

export interface SearchQuery {
  latitude: number
  longitude: number
  radiusMeters: number
  sort: 'distance' | 'ending_soon'
  minDiscountRate: number
  limit: number
  /** The previous page's last listing: this page starts strictly after it. */
  after: CursorKey | undefined
  nowMs: number
}

export interface Hit {
  id: string
  providerId: string
  /** Exact (unrounded) great-circle distance in metres. */
  distance: number
  expiresAtUnix: number
  /** The version the candidate query read: the listing's representation at it is the one to send. */
  version: number
  /** Its holds as the candidate query read them (null: none held). */
  heldRecord: string | null
  holdsExpireMs: number | null
}

export type Candidates = (area: QueryArea, filter: ActiveFilter) => Promise<CandidateRow[]>

/**
 * The first circle nearest-first asks. A dense city holds a page within it and reads a quarter of the rows a 600 m one
 * would; where it is sparse the search widens. On PostgreSQL too, since queries that arrive together are one
 * statement: a second circle costs rows, not a round trip of its own (docs/design/0021-one-first-circle.md).
 */
const FIRST_RADIUS_M = 300
/** The first window of expiry ending-soonest asks, in seconds: short, since a dense city has expiries every second. */
const FIRST_WINDOW_S = 4
/** A window holding more rows than this per listing wanted is too long: the filter rarely leaves out 7 in 8. */
const PROBE_ROWS_PER_WANTED = 8
/** Past this window the search asks the open end of time: no listing lives a year. */
const LAST_WINDOW_S = 366 * 24 * 3600

function growth(found: number, wanted: number, dimension: 1 | 2): number {
  // Density is roughly even at one step's scale: aim past the wanted count, bounded both ways (a page just short
  // should not take many steps, and a sparse step says little).
  const ratio = ((wanted / Math.max(found, 1)) * 1.25) ** (1 / dimension)
  return Math.min(16, Math.max(1.5, ratio))
}

/** Is (key, id) strictly after the cursor in the order key ascending, then id ascending? */
const isAfter = (key: number, id: string, after: CursorKey | undefined) => after === undefined || key > after.key || (key === after.key && id > after.id)

const byKeyThenId = (key: (hit: Hit) => number) => (a: Hit, b: Hit) => key(a) - key(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/** The first `limit + 1` matching listings after the cursor, in order: the extra one says whether another page exists. */
export async function search(query: SearchQuery, candidates: Candidates): Promise<Hit[]> {
  // Expired once now ≥ expiresAtUnix × 1000.
  const firstLiving = Math.floor(query.nowMs / 1000) + 1
  const wanted = query.limit + 1
  const hitsOf = (rows: CandidateRow[], within: number, key: (hit: Hit) => number) => {
    const hits: Hit[] = []
    for (const row of rows) {
      // Every unit held until full_until_ms: nothing of it can be had before then.
      if (row.full_until_ms !== null && query.nowMs < row.full_until_ms) continue
      const distance = greatCircleMeters(query.latitude, query.longitude, row.latitude, row.longitude)
      if (distance > within) continue
      const hit: Hit = {
        id: row.id,
        providerId: row.provider_id,
        distance,
        expiresAtUnix: row.expires_at_unix,
        version: row.version,
        heldRecord: row.held_record,
        holdsExpireMs: row.holds_expire_ms,
      }
      if (isAfter(key(hit), hit.id, query.after)) hits.push(hit)
    }
    return hits
  }
  if (query.sort === 'distance') {
    const key = (hit: Hit) => hit.distance
    const filter: ActiveFilter = { minDiscountRate: query.minDiscountRate, expiresFrom: firstLiving, expiresUntil: null }
    let radius = Math.min(query.radiusMeters, (query.after?.key ?? 0) + FIRST_RADIUS_M)
    for (;;) {
      const rows = await candidates({ latitude: query.latitude, longitude: query.longitude, radiusMeters: radius }, filter)
      const hits = hitsOf(rows, radius, key)
      if (hits.length >= wanted || radius >= query.radiusMeters) return hits.sort(byKeyThenId(key)).slice(0, wanted)
      radius = Math.min(query.radiusMeters, radius * growth(hits.length, wanted, 2))
    }
  }

  const key = (hit: Hit) => hit.expiresAtUnix
  const area: QueryArea = { latitude: query.latitude, longitude: query.longitude, radiusMeters: query.radiusMeters }
  // Windows follow each other, so once their hits hold `wanted`, the first by expiry are among them. An empty
  // window only doubles the next, and one longer than a second is asked with a row limit: past a long gap, a
  // window that reaches it is halved and asked again rather than fetching every row.
  const hits: Hit[] = []
  const probeLimit = PROBE_ROWS_PER_WANTED * wanted
  let from = Math.max(firstLiving, query.after?.key ?? 0)
  let window = FIRST_WINDOW_S
  for (;;) {
    const until = window > LAST_WINDOW_S ? null : from + window - 1
    const limit = window > 1 ? probeLimit : undefined
    const filter: ActiveFilter = { minDiscountRate: query.minDiscountRate, expiresFrom: from, expiresUntil: until, limit }
    const rows = await candidates(area, filter)
    if (limit !== undefined && rows.length >= limit) {
      window = Math.floor(Math.min(window, LAST_WINDOW_S) / 2)
      continue
    }
    const found = hitsOf(rows, query.radiusMeters, key)
    hits.push(...found)
    if (hits.length >= wanted || until === null) return hits.sort(byKeyThenId(key)).slice(0, wanted)
    from = until + 1
    window = found.length === 0 ? window * 2 : Math.ceil(window * Math.min(8, Math.max(1, ((wanted - hits.length) / found.length) * 1.25)))
  }
}
