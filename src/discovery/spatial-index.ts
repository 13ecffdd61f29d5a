import { sql, type RawBuilder } from 'kysely'
import type { DialectName } from '../db/connection.js'
import { scriptSql } from '../db/script.js'
import { EXPIRY_EPOCH_UNIX, EXPIRY_SCALE } from './sphere.js'

/*
 * The one place where discovery's SQL differs between the databases: how the 4-D box (sphere.ts) is asked of
 * each one's spatial index. Everything else (the exact distance, the order, the pages) is the same code.
 *
 * SQLite: an R*Tree virtual table, listing_geo (better-sqlite3 builds SQLite with it), written in the create's
 * own transaction (sqlite-create.ts). SQLite has no index on expressions of this kind, so the points are stored.
 * PostgreSQL: a GiST index of the `cube` extension over an expression of the listing's own columns, partial on
 * "not withdrawn, not sold out": nothing to write on the create path, and PostgreSQL maintains it.
 */

/**
 * What a candidate query asks the index: the ball a circle lies in (its centre on the unit sphere and its chord,
 * sphere.ts), as the cube centre ± chord, and a range of the expiry coordinate.
 */
export interface IndexBox {
  centre: { x: number; y: number; z: number }
  chord: number
  tLo: number
  tHi: number
}

/** The exact conditions besides the box: what makes a listing discoverable now, and the expiry range asked. */
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
 * A coordinate, with magnitudes below 1e-200 degrees read as 0. PostgreSQL raises "value out of range: underflow"
 * when a float8 product rounds to zero, and an index expression that raises fails the insert: a create at
 * latitude 2e-323 (a valid number, found by the fuzz test) answered 500. The box only preselects (its margin is
 * 1e-9 of the unit sphere), so a position moved by less than 1e-200 degrees changes nothing.
 */
const NOT_TINY = (column: string) => `(case when abs(${column}) < 1e-200 then 0 else ${column} end)`

/**
 * PostgreSQL's expression for a listing's 4-D point: the planner uses the index only for the very expression it
 * was built on (migration 2026-11-24-discovery), so this must stay that expression, and the partial condition too.
 */
const POSTGRES_POINT = `cube(array[
  cos(radians(${NOT_TINY('latitude')})) * cos(radians(${NOT_TINY('longitude')})),
  cos(radians(${NOT_TINY('latitude')})) * sin(radians(${NOT_TINY('longitude')})),
  sin(radians(${NOT_TINY('latitude')})),
  (expires_at_unix - ${EXPIRY_EPOCH_UNIX})::float8 * ${EXPIRY_SCALE}::float8])`

/** Rows that can be active: PostgreSQL's partial index holds these only, and every query says so to use it. */
const POSTGRES_PARTIAL = 'withdrawn_at_ms is null and sold_out = 0'


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

/** The parameters of a candidate query: the box's corners, and the filter. */
export interface CandidateParams extends Record<string, unknown> {
  lx: number
  ly: number
  lz: number
  lt: number
  hx: number
  hy: number
  hz: number
  ht: number
  minDiscountRate: number
  expiresFrom: number
  expiresUntil: number
  limit: number
  cx: number
  cy: number
  cz: number
  /** The squared chord, widened (BALL_MARGIN): the R*Tree's float32 points lie within it if the listing is in the circle. */
  reach2: number
}

/**
 * 1e-6 of the unit sphere, 6.4 m: far above the error of an R*Tree point (float32, rounded outwards: ~1.2e-7 per
 * coordinate, ~2e-7 in distance) and small enough that almost nothing outside the circle gets through.
 */
const BALL_MARGIN = 1e-6

/** The limit that is none: SQLite reads a negative limit as none, PostgreSQL does not; this is far above any box. */
const NO_LIMIT = 2 ** 31 - 1

type Param = <K extends keyof CandidateParams & string>(name: K) => CandidateParams[K]

/**
 * The candidate query: every active listing whose point lies in the box and that passes the filter, with or
 * without an upper end of expiry. Built once per shape (PreparedQuery), bound per request.
 */
export function candidatesSql(dialect: DialectName, bounded: boolean, param: Param): RawBuilder<CandidateRow> {
  const until = bounded ? sql` and expires_at_unix <= ${param('expiresUntil')}` : sql``
  if (dialect === 'sqlite') {
    // The R*Tree's constraints first, then the listing by primary key (listing_geo.listing_id): the join sees only
    // what the box let through, and of that only the points within the circle's ball (a condition on the R*Tree's
    // own columns, which SQLite checks before the join). A cube around a circle on the sphere holds ~1.7× the
    // circle's listings; each costs a lookup by text id, ~2.5 µs: 52 rows and 207 µs → 33 rows and 144 µs at a
    // dense city centre. The R*Tree also holds withdrawn and sold-out listings (writes there are on the create
    // path only); the exact conditions drop them.
    const cx = param('cx')
    const cy = param('cy')
    const cz = param('cz')
    return sql<CandidateRow>`
      select l.id, l.version, l.latitude, l.longitude, l.expires_at_unix
      from listing_geo g join listings l on l.id = g.listing_id
      where g.x0 <= ${param('hx')} and g.x1 >= ${param('lx')} and g.y0 <= ${param('hy')} and g.y1 >= ${param('ly')}
        and g.z0 <= ${param('hz')} and g.z1 >= ${param('lz')} and g.t0 <= ${param('ht')} and g.t1 >= ${param('lt')}
        and (g.x0 - ${cx}) * (g.x0 - ${cx}) + (g.y0 - ${cy}) * (g.y0 - ${cy}) + (g.z0 - ${cz}) * (g.z0 - ${cz}) <= ${param('reach2')}
        and l.withdrawn_at_ms is null and l.sold_out = 0 and l.discount_rate >= ${param('minDiscountRate')}
        and l.expires_at_unix >= ${param('expiresFrom')}${until}
      limit ${param('limit')}`
  }
  return sql<CandidateRow>`
    select id, version, latitude, longitude, expires_at_unix
    from listings
    where ${sql.raw(POSTGRES_POINT)} <@ cube(
        array[${param('lx')}, ${param('ly')}, ${param('lz')}, ${param('lt')}]::float8[],
        array[${param('hx')}, ${param('hy')}, ${param('hz')}, ${param('ht')}]::float8[])
      and ${sql.raw(POSTGRES_PARTIAL)} and discount_rate >= ${param('minDiscountRate')}
      and expires_at_unix >= ${param('expiresFrom')}${until}
    limit ${param('limit')}`
}

export function candidateParams(box: IndexBox, filter: ActiveFilter): CandidateParams {
  const { centre: { x: cx, y: cy, z: cz }, chord } = box
  return {
    lx: cx - chord, ly: cy - chord, lz: cz - chord, lt: box.tLo,
    hx: cx + chord, hy: cy + chord, hz: cz + chord, ht: box.tHi,
    cx, cy, cz,
    reach2: (chord + BALL_MARGIN) ** 2,
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
