import { sql, type RawBuilder } from 'kysely'
import type { DialectName } from '../db/connection.js'
import { scriptSql } from '../db/script.js'
import { cellRanges, REGION_DIVISOR, regionsOf } from './cells.js'
import { chordHalfSide, latLonBounds, unitVector } from './sphere.js'

/*
 * How discovery asks the database for candidates: a cell index in plain B-trees, the same two indexes on both
 * databases (migration 2026-11-24-discovery-cells), partial on "can be active", holding what is read:
 *
 * - nearest-first (no upper end of expiry): listings_near, by ranges of cells (cells.ts) that hold the circle;
 * - ending-soonest windows (an upper end): listings_ending, by region and expiry, so a window reads only the
 *   listings expiring in it.
 *
 * Either way each index entry is checked against the circle's latitude/longitude box (sphere.ts) on the index
 * itself, so what reaches the search (search.ts: exact distance, order) is ~1.3× what lies in the circle. The
 * differences between the databases: how a JSON array parameter becomes rows, PostgreSQL's LATERAL (KEYS), and
 * PostgreSQL's rows coming packed in one (PackedCandidates).
 */

/** The circle a candidate query is for. */
export interface QueryArea {
  latitude: number
  longitude: number
  radiusMeters: number
}

/** The exact conditions besides the area: what makes a listing discoverable now, and the expiry range asked. */
export interface ActiveFilter {
  minDiscountRate: number
  /** Inclusive: nowUnix + 1 or more (contract §10: expired once now ≥ expiresAtUnix). */
  expiresFrom: number
  /** Inclusive, or no upper end. */
  expiresUntil: number | null
  /** At most this many rows (a probe: ending-soonest's window is too long if it reaches this), or all of them. */
  limit?: number
}

/**
 * Row of a candidate query: enough to compute the exact distance and the order, and the version, which names
 * the listing's text in the page's cache (listing-json.ts).
 */
export interface CandidateRow {
  id: string
  version: number
  latitude: number
  longitude: number
  expires_at_unix: number
}

/** The parameters of a candidate query. */
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

/** The limit that is none: SQLite reads a negative limit as none, PostgreSQL does not; this is far above any area. */
const NO_LIMIT = 2 ** 31 - 1

type Param = <K extends keyof CandidateParams & string>(name: K) => CandidateParams[K]

/**
 * A JSON array parameter as rows of one column `value` (a range's ends are `value ->> 0` and `value ->> 1`),
 * each joined to the listings its key selects. SQLite joins them in the order written, each row's key an index
 * range. PostgreSQL's planner, joining freely, scanned the whole index by the other conditions instead (8.8 ms)
 * or read the table (45 ms): a LATERAL subquery that cannot be pulled up (`offset 0`) makes each key a scan.
 */
const KEYS: Record<DialectName, { rows: string; first: string; last: string; number: string }> = {
  sqlite: { rows: 'json_each(?) as r', first: 'r.value ->> 0', last: 'r.value ->> 1', number: 'r.value' },
  postgres: {
    rows: 'jsonb_array_elements(cast(? as jsonb)) as r(value)',
    first: '(r.value ->> 0)::bigint',
    last: '(r.value ->> 1)::bigint',
    number: "(r.value #>> '{}')::bigint",
  },
}

const CANDIDATE_COLUMNS = sql.raw('l.id, l.version, l.latitude, l.longitude, l.expires_at_unix')

/**
 * The candidate query: every listing that can be active in the keys' cells or regions, within the box, passing
 * the filter, with or without an upper end of expiry (which decides the index). Built once per shape
 * (PreparedQuery), bound per request. The condition "can be active" is the indexes' own, so they are used.
 * Read its rows with candidateRows.
 */
export function candidatesSql(dialect: DialectName, bounded: boolean, param: Param): RawBuilder<CandidateRow | PackedCandidates> {
  const keys = KEYS[dialect]
  const [before, after] = keys.rows.split('?') as [string, string]
  const rows = sql`${sql.raw(before)}${param('keys')}${sql.raw(after)}`
  const byKey = bounded
    ? sql`(l.cell / ${sql.lit(REGION_DIVISOR)}) = ${sql.raw(keys.number)} and l.expires_at_unix between ${param('expiresFrom')} and ${param('expiresUntil')}`
    : sql`l.cell between ${sql.raw(keys.first)} and ${sql.raw(keys.last)} and l.expires_at_unix >= ${param('expiresFrom')}`
  const filter = sql`l.withdrawn_at_ms is null and l.sold_out = 0
      and l.latitude between ${param('south')} and ${param('north')}
      and (l.longitude between ${param('west1')} and ${param('east1')} or l.longitude between ${param('west2')} and ${param('east2')})
      and l.discount_rate >= ${param('minDiscountRate')}`
  if (dialect === 'sqlite') {
    return sql<CandidateRow>`select ${CANDIDATE_COLUMNS} from ${rows} join listings l on ${byKey} where ${filter} limit ${param('limit')}`
  }
  return sql<PackedCandidates>`
    select string_agg(concat_ws(' ', c.id, c.version, c.latitude, c.longitude, c.expires_at_unix), ' ') as packed from (
      select c.* from ${rows} cross join lateral (select ${CANDIDATE_COLUMNS} from listings l where ${byKey} and ${filter} offset 0) as c
      limit ${param('limit')}) as c`
}

/**
 * PostgreSQL's candidates come as one row of text: each candidate's id, version, latitude, longitude and expiry,
 * separated by spaces (ids are this service's, made of letters and digits; a double's text is PostgreSQL's
 * shortest exact one, as pg reads any double). On the event loop, which PostgreSQL's requests saturate, 40 rows
 * of 5 columns cost ~105 µs to receive and parse, one row ~45 µs (scratch measurement, node CPU per query):
 * 3,387 → 4,378 requests a second in the service at 100k (after VACUUM).
 */
export interface PackedCandidates {
  packed: string | null
}

/** A candidate query's rows as CandidateRows, whichever form the dialect's query returns them in. */
export function candidateRows(rows: ReadonlyArray<CandidateRow | PackedCandidates>): CandidateRow[] {
  const first = rows[0]
  if (first === undefined || !('packed' in first)) return rows as CandidateRow[]
  if (first.packed === null) return [] // no candidates: string_agg of no rows
  const fields = first.packed.split(' ')
  const candidates: CandidateRow[] = []
  for (let k = 0; k + 4 < fields.length; k += 5) {
    candidates.push({
      id: fields[k] as string,
      version: Number(fields[k + 1]),
      latitude: Number(fields[k + 2]),
      longitude: Number(fields[k + 3]),
      expires_at_unix: Number(fields[k + 4]),
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
 * `l.id` is one of the ids in a JSON array parameter: one statement text for any number of ids, so it is prepared
 * once. The condition is the write scripts' (ScriptSql.inJsonList, db/script.ts), with the parameter bound here.
 */
export function idInJsonArray(dialect: DialectName, ids: unknown): RawBuilder<boolean> {
  const [before, after] = scriptSql[dialect].inJsonList('l.id').split('?') as [string, string]
  return sql<boolean>`${sql.raw(before)}${ids}${sql.raw(after)}`
}
