import { sql, type RawBuilder } from 'kysely'
import type { DialectName } from '../db/connection.js'
import { cellRanges, REGION_DIVISOR, regionsOf } from './cells.js'
import { chordHalfSide, latLonBounds, unitVector } from './sphere.js'

/*
 * Nearest-first reads listings_near by cell ranges; an ending-soonest window (an upper end of expiry) reads
 * listings_ending by region and expiry. Each index entry is checked against the circle's latitude/longitude box
 * on the index itself.
 */

export interface QueryArea {
  latitude: number
  longitude: number
  radiusMeters: number
}

/** The exact conditions besides the area: what makes a listing discoverable now, and the expiry range asked. */
export interface ActiveFilter {
  minDiscountRate: number
  /** Inclusive. */
  expiresFrom: number
  /** Inclusive, or no upper end. */
  expiresUntil: number | null
  /** At most this many rows (ending-soonest's probe of a window), or all. */
  limit?: number
}

/** Enough to compute the exact distance and the order, and to find the listing's representation at its version. */
export interface CandidateRow {
  id: string
  /** With id, the listing's key: what reads it again whole. */
  provider_id: string
  latitude: number
  longitude: number
  expires_at_unix: number
  version: number
  /** Its holds (reservations/stock.ts): held units by position as JSON, or null when none is held. */
  held_record: string | null
  holds_expire_ms: number | null
  /** While now is before it, nothing of it is available: it is not discoverable. */
  full_until_ms: number | null
}

export interface CandidateParams extends Record<string, unknown> {
  /** JSON: `[[first, last], …]` ranges of cells (nearest-first), or `[region, …]` (a window of expiry). */
  keys: string
  south: number
  north: number
  west1: number
  east1: number
  west2: number
  east2: number
  minDiscountRate: number
  expiresFrom: number
  expiresUntil: number
  limit: number
}

/** No limit, in both dialects (PostgreSQL does not read a negative one as none). */
const NO_LIMIT = 2 ** 31 - 1

/** A candidate query's bound value by name. */
type Value = (name: keyof CandidateParams & string) => unknown

const CANDIDATE_COLUMNS = sql.raw(
  'l.id, l.provider_id, l.latitude, l.longitude, l.expires_at_unix, l.version, l.held_record, l.holds_expire_ms, l.full_until_ms',
)

/** The conditions on one key row `r` (a range of cells, or a region) and on the listing, in either dialect. */
function conditions(bounded: boolean, value: Value, key: { first: string; last: string; number: string }) {
  const byKey = bounded
    ? sql`(l.cell / ${sql.lit(REGION_DIVISOR)}) = ${sql.raw(key.number)} and l.expires_at_unix between ${value('expiresFrom')} and ${value('expiresUntil')}`
    : sql`l.cell between ${sql.raw(key.first)} and ${sql.raw(key.last)} and l.expires_at_unix >= ${value('expiresFrom')}`
  const filter = sql`l.withdrawn_at_ms is null and l.sold_out = 0
      and l.latitude between ${value('south')} and ${value('north')}
      and (l.longitude between ${value('west1')} and ${value('east1')} or l.longitude between ${value('west2')} and ${value('east2')})
      and l.discount_rate >= ${value('minDiscountRate')}`
  return { byKey, filter }
}

/** SQLite's candidate query: the keys (a JSON array) drive the join, SQLite joining in the order written. */
export function sqliteCandidatesSql(bounded: boolean, param: Value): RawBuilder<CandidateRow> {
  const { byKey, filter } = conditions(bounded, param, { first: 'r.value ->> 0', last: 'r.value ->> 1', number: 'r.value' })
  return sql<CandidateRow>`
    select ${CANDIDATE_COLUMNS} from json_each(${param('keys')}) as r join listings l on ${byKey}
    where ${filter} limit ${param('limit')}`
}

/** PostgreSQL types of a batch's query fields: its JSON objects are read as rows of these columns. */
const FIELD_TYPES: Record<keyof CandidateParams, string> = {
  keys: 'jsonb',
  south: 'float8',
  north: 'float8',
  west1: 'float8',
  east1: 'float8',
  west2: 'float8',
  east2: 'float8',
  minDiscountRate: 'float8',
  expiresFrom: 'bigint',
  expiresUntil: 'bigint',
  limit: 'bigint',
}

const QUERY_COLUMNS = sql.raw(
  Object.entries(FIELD_TYPES)
    .map(([name, type]) => `"${name}" ${type}`)
    .join(', '),
)

/**
 * PostgreSQL's candidate queries, several in one statement: `batch` is a JSON array of queries (candidateBatch),
 * answered one row each, in order, each query's rows packed in one. Most of a query's cost to the service and to
 * the backend is its round trip, not its rows. The batch is read as typed rows once (jsonb_to_recordset), so each
 * index entry is compared with plain values. The LATERAL subquery is kept from being pulled up (`offset 0`):
 * joining freely, the planner scanned the whole index or the table instead.
 */
export function postgresCandidatesSql(bounded: boolean, param: (name: 'batch') => unknown): RawBuilder<PackedCandidates> {
  const field: Value = (name) => sql.raw(`q."${name}"`)
  const { byKey, filter } = conditions(bounded, field, {
    first: '(r.value ->> 0)::bigint',
    last: '(r.value ->> 1)::bigint',
    number: "(r.value #>> '{}')::bigint",
  })
  return sql<PackedCandidates>`
    select (
      select string_agg(concat_ws(' ', c.id, c.provider_id, c.latitude, c.longitude, c.expires_at_unix, c.version,
        coalesce(c.held_record, '-'), coalesce(c.holds_expire_ms, -1), coalesce(c.full_until_ms, -1)), ' ') from (
        select c.* from jsonb_array_elements(q.keys) as r(value)
          cross join lateral (select ${CANDIDATE_COLUMNS} from listings l where ${byKey} and ${filter} offset 0) as c
        limit ${field('limit')}) as c
    ) as packed
    from rows from (jsonb_to_recordset(cast(${param('batch')} as jsonb)) as (${QUERY_COLUMNS})) with ordinality as q
    order by q.ordinality`
}

/** The queries of a PostgreSQL batch as its JSON parameter: each query's fields, its keys as JSON, not as text. */
export function candidateBatch(queries: readonly CandidateParams[]): string {
  return `[${queries.map(({ keys, ...fields }) => `{"keys":${keys},${JSON.stringify(fields).slice(1)}`).join(',')}]`
}

/**
 * One query's candidates as one row of text, cheaper for the event loop than a row each: id, provider id, latitude,
 * longitude, expiry, version, held record (`-` for none), holds' first expiry and full-until (`-1` for none),
 * space-separated (ids and a held record's JSON hold no spaces; a double's text is PostgreSQL's shortest exact one).
 */
export interface PackedCandidates {
  packed: string | null
}

/** null is none (string_agg of no rows). */
export function unpackCandidates(packed: string | null): CandidateRow[] {
  if (packed === null) return []
  const fields = packed.split(' ')
  const candidates: CandidateRow[] = []
  for (let k = 0; k + 8 < fields.length; k += 9) {
    const held = fields[k + 6] as string
    const holdsExpire = Number(fields[k + 7])
    const fullUntil = Number(fields[k + 8])
    candidates.push({
      id: fields[k] as string,
      provider_id: fields[k + 1] as string,
      latitude: Number(fields[k + 2]),
      longitude: Number(fields[k + 3]),
      expires_at_unix: Number(fields[k + 4]),
      version: Number(fields[k + 5]),
      held_record: held === '-' ? null : held,
      holds_expire_ms: holdsExpire < 0 ? null : holdsExpire,
      full_until_ms: fullUntil < 0 ? null : fullUntil,
    })
  }
  return candidates
}

export function candidateParams(area: QueryArea, filter: ActiveFilter): CandidateParams {
  const centre = unitVector(area.latitude, area.longitude)
  const half = chordHalfSide(area.radiusMeters)
  const { south, north, longitudes } = latLonBounds(area.latitude, area.longitude, area.radiusMeters)
  const [[west1, east1], [west2, east2] = [west1, east1]] = longitudes as [[number, number], [number, number]?]
  return {
    keys: JSON.stringify(filter.expiresUntil === null ? cellRanges(centre, half) : regionsOf(centre, half)),
    south,
    north,
    west1,
    east1,
    west2,
    east2,
    minDiscountRate: filter.minDiscountRate,
    expiresFrom: filter.expiresFrom,
    expiresUntil: filter.expiresUntil ?? 0,
    limit: filter.limit ?? NO_LIMIT,
  }
}

/**
 * The listings `l` whose keys are in a JSON array parameter of `[provider_id, id]` pairs, each read by its primary
 * key (provider_id, id): one statement text for any number of listings. Needs `l` and nothing else in the FROM.
 */
export function listingsByKeys(dialect: DialectName, keys: unknown): RawBuilder<unknown> {
  return dialect === 'postgres'
    ? sql`jsonb_array_elements(cast(${keys} as jsonb)) as k(v) join listings l on l.provider_id = k.v ->> 0 and l.id = k.v ->> 1`
    : sql`json_each(${keys}) as k join listings l on l.provider_id = k.value ->> 0 and l.id = k.value ->> 1`
}
