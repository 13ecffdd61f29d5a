import { createHmac, hash, timingSafeEqual } from 'node:crypto'
import type { Database } from '../db/connection.js'
import type { DiscoverParams } from './schemas.js'

/**
 * The `cursor` of a discovery page: the sort key of the page's last listing (its exact distance in metres, or
 * its expiresAtUnix) and its id, so the next page starts strictly after it (keyset: no listing twice, none
 * skipped while nothing changes, at the same cost for page 1 and page 100). It also carries a fingerprint of
 * the query it continues, so a cursor sent with another point, radius, sort or minimum discount is refused
 * instead of silently answering a different question.
 *
 * Signed: a cursor is only ever one this service issued. Its content reaches the candidate queries as bound
 * values, and a value no page could end on (a fractional expiry, a key past any range) must never get there, so
 * the cursor is authenticated, not merely parsed. The key is the database's (the `service_keys` row made by the
 * migration), so every instance issues and accepts the same cursors. Text: base64url(JSON) "." base64url(MAC).
 */
export interface CursorKey {
  key: number
  id: string
}

const LISTING_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/
/** Long enough to be unguessable, short enough to keep cursors short. */
const MAC_BYTES = 16
/** Everything a cursor's text may be: the payload's characters, one dot, the MAC's. Linear, anchored, bounded. */
const CURSOR_TEXT = /^[A-Za-z0-9_-]{1,240}\.[A-Za-z0-9_-]{22}$/

const NOT_ONE = 'is not a nextCursor of this API'

/** What a cursor is bound to: every parameter that changes which listings match or their order, not `limit`. */
function fingerprint(params: DiscoverParams): string {
  const text = JSON.stringify([params.latitude, params.longitude, params.radiusKm, params.sort, params.minDiscountRate])
  return hash('sha256', text, 'base64url').slice(0, 16)
}

interface Payload {
  q: string
  k: number
  id: string
}

/** What a cursor's text says, when it has a cursor's shape: its payload (not yet known to be the service's). */
function payloadOf(cursor: string): { payload: string; mac: string; value: Payload } | undefined {
  if (!CURSOR_TEXT.test(cursor)) return undefined
  const [payload, mac] = cursor.split('.') as [string, string]
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  const { q, k, id } = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  if (typeof q !== 'string' || typeof id !== 'string' || !LISTING_ID.test(id) || typeof k !== 'number' || !Number.isFinite(k) || k < 0) {
    return undefined
  }
  return { payload, mac, value: { q, k, id } }
}

/**
 * The `discovery-cursor` format (http/validation.ts): the text's shape, checked with the other parameters, so a
 * garbage cursor is named together with every other bad parameter of the request. Whether the service issued it
 * is the route's to say (CursorCodec.decode).
 */
export const cursorFormat = {
  validate: (cursor: string) => payloadOf(cursor) !== undefined,
  message: () => NOT_ONE,
}

export class CursorCodec {
  readonly #key: Buffer

  constructor(key: Buffer) {
    this.#key = key
  }

  /** The codec with the key every instance of this database shares. */
  static async of(database: Database): Promise<CursorCodec> {
    const row = await database.kysely.selectFrom('service_keys').select('secret').where('name', '=', 'discovery-cursor').executeTakeFirst()
    if (!row) throw new Error('the discovery-cursor key is missing: the database is not migrated')
    return new CursorCodec(Buffer.from(row.secret, 'base64url'))
  }

  #mac(payload: string): Buffer {
    return createHmac('sha256', this.#key).update(payload).digest().subarray(0, MAC_BYTES)
  }

  encode(params: DiscoverParams, last: CursorKey): string {
    const payload = Buffer.from(JSON.stringify({ q: fingerprint(params), k: last.key, id: last.id })).toString('base64url')
    return `${payload}.${this.#mac(payload).toString('base64url')}`
  }

  /** The position a cursor names, or a sentence saying why it does not continue this query (for the 400). */
  decode(params: DiscoverParams, cursor: string): CursorKey | string {
    const parsed = payloadOf(cursor)
    if (!parsed) return NOT_ONE
    // Compared as text: base64url's last character has bits no decoder reads, so bytes would accept variants.
    const expected = Buffer.from(this.#mac(parsed.payload).toString('base64url'))
    const sent = Buffer.from(parsed.mac)
    if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) return NOT_ONE
    if (parsed.value.q !== fingerprint(params)) return 'was given for other latitude, longitude, radiusKm, sort or minDiscountRate'
    return { key: parsed.value.k, id: parsed.value.id }
  }
}
