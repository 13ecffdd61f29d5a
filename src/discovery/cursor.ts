import { hash } from 'node:crypto'
import type { DiscoverParams } from './schemas.js'

/**
 * The `cursor` of a discovery page: the sort key of the page's last listing (its exact distance in metres, or
 * its expiresAtUnix) and its id, so the next page starts strictly after it (keyset: no listing twice, none
 * skipped while nothing changes, at the same cost for page 1 and page 100). It also carries a fingerprint of
 * the query it continues, so a cursor sent with another point, radius, sort or minimum discount is refused
 * instead of silently answering a different question. Opaque to clients: base64url of JSON.
 */
export interface CursorKey {
  key: number
  id: string
}

const LISTING_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/

/** What a cursor is bound to: every parameter that changes which listings match or their order, not `limit`. */
function fingerprint(params: DiscoverParams): string {
  const text = JSON.stringify([params.latitude, params.longitude, params.radiusKm, params.sort, params.minDiscountRate])
  return hash('sha256', text, 'base64url').slice(0, 16)
}

export function encodeCursor(params: DiscoverParams, last: CursorKey): string {
  return Buffer.from(JSON.stringify({ q: fingerprint(params), k: last.key, id: last.id })).toString('base64url')
}

const NOT_ONE = 'is not a nextCursor of this API'

/** A cursor's content, when its text is one this API makes (whatever query it belongs to). */
function parse(cursor: string): { q: string; key: number; id: string } | undefined {
  if (!/^[A-Za-z0-9_-]{1,300}$/.test(cursor)) return undefined
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
  const { q, k, id, ...rest } = value as Record<string, unknown>
  if (Object.keys(rest).length > 0 || typeof q !== 'string' || typeof id !== 'string' || !LISTING_ID.test(id)) return undefined
  if (typeof k !== 'number' || !Number.isFinite(k) || k < 0) return undefined
  return { q, key: k, id }
}

/**
 * The `discovery-cursor` format (http/validation.ts): checked with the other parameters, so a garbage cursor is
 * named together with every other bad parameter of the request.
 */
export const cursorFormat = {
  validate: (cursor: string) => parse(cursor) !== undefined,
  message: () => NOT_ONE,
}

/** The position a cursor names, or a sentence saying why it does not continue this query (for the 400). */
export function decodeCursor(params: DiscoverParams, cursor: string): CursorKey | string {
  const parsed = parse(cursor)
  if (!parsed) return NOT_ONE
  if (parsed.q !== fingerprint(params)) return 'was given for other latitude, longitude, radiusKm, sort or minDiscountRate'
  return { key: parsed.key, id: parsed.id }
}
