import { createHmac, hash, timingSafeEqual } from 'node:crypto'
import type { Database } from '../db/connection.js'
import { invalidRequest } from '../errors.js'
import type { DiscoverParams } from './schemas.js'

/**
 * A cursor's position (keyset). A cursor also holds a fingerprint of the query, so one sent with other parameters is
 * refused; it is signed, since it reaches the candidate queries, with the database's key so every instance accepts it.
 */
export interface CursorKey {
  key: number
  id: string
}

/** Unguessable, and short. */
const MAC_BYTES = 16
/** Linear, anchored, bounded. */
const CURSOR_TEXT = /^[A-Za-z0-9_-]{1,240}\.[A-Za-z0-9_-]{22}$/

const NOT_ONE = 'is not a nextCursor of this API'

/** What a discovery cursor is bound to: every parameter that changes which listings match or their order, not `limit`. */
export const discoverQuery = (params: DiscoverParams) =>
  JSON.stringify([params.latitude, params.longitude, params.radiusKm, params.sort, params.minDiscountRate])

const fingerprint = (query: string) => hash('sha256', query, 'base64url').slice(0, 16)

/** A listing's or a reservation's id. */
const CURSOR_ID = /^(?:rsv_[0-9A-Z]{26}|[0-9A-HJKMNP-TV-Z]{26})$/

interface Payload {
  q: string
  k: number
  id: string
}

/** A cursor's parts when it has a cursor's shape; not yet known to be the service's. */
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
  if (typeof q !== 'string' || typeof id !== 'string' || !CURSOR_ID.test(id) || typeof k !== 'number' || !Number.isFinite(k) || k < 0) {
    return undefined
  }
  return { payload, mac, value: { q, k, id } }
}

/** The `discovery-cursor` format: its shape is validated with the other parameters; whether it was issued, by decode(). */
export const cursorFormat = {
  validate: (cursor: string) => payloadOf(cursor) !== undefined,
  message: () => NOT_ONE,
}

export class CursorCodec {
  readonly #key: Buffer

  constructor(key: Buffer) {
    this.#key = key
  }

  /** With the key every instance of this database shares. */
  static async of(database: Database): Promise<CursorCodec> {
    const row = await database.kysely.selectFrom('service_keys').select('secret').where('name', '=', 'discovery-cursor').executeTakeFirst()
    if (!row) throw new Error('the discovery-cursor key is missing: the database is not migrated')
    return new CursorCodec(Buffer.from(row.secret, 'base64url'))
  }

  #mac(payload: string): Buffer {
    return createHmac('sha256', this.#key).update(payload).digest().subarray(0, MAC_BYTES)
  }

  /** A cursor after `last` of the query `query` (its parameters as text, e.g. discoverQuery()). */
  encode(query: string, last: CursorKey): string {
    const payload = Buffer.from(JSON.stringify({ q: fingerprint(query), k: last.key, id: last.id })).toString('base64url')
    return `${payload}.${this.#mac(payload).toString('base64url')}`
  }

  /** The position a cursor names, or why it does not continue this query (for the 400). */
  decode(query: string, cursor: string, other = 'was given for other latitude, longitude, radiusKm, sort or minDiscountRate'): CursorKey | string {
    const parsed = payloadOf(cursor)
    if (!parsed) return NOT_ONE
    // As text: base64url's last character has bits no decoder reads, so comparing bytes would accept variants.
    const expected = Buffer.from(this.#mac(parsed.payload).toString('base64url'))
    const sent = Buffer.from(parsed.mac)
    if (sent.length !== expected.length || !timingSafeEqual(sent, expected)) return NOT_ONE
    if (parsed.value.q !== fingerprint(query)) return other
    return { key: parsed.value.k, id: parsed.value.id }
  }

  /** The position the `cursor` parameter names, if given; a 400 naming it when it does not continue this query. */
  after(query: string, cursor: string | undefined, other?: string): CursorKey | undefined {
    if (cursor === undefined) return undefined
    const decoded = this.decode(query, cursor, other)
    if (typeof decoded === 'string') throw invalidRequest([{ parameter: 'cursor', detail: decoded }])
    return decoded
  }
}
