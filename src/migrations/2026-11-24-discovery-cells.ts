import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../db/connection.js'
import { cellOf } from '../discovery/cells.js'
import { unitVector } from '../discovery/sphere.js'

/**
 * Discovery's spatial index becomes a cell index in plain B-trees, the same on both databases. The R*Tree (SQLite)
 * and the cube GiST index (PostgreSQL) of 2026-11-24-discovery are dropped: a query paid per R*Tree entry in its
 * box plus a join by text id per candidate, and the GiST scan grew with the table.
 *
 * - `cell`: the listing's finest cell, written by the create (listings never move). Filled here for every row.
 *   cellOf is imported, not copied: these must be the very cells the writers compute, and a change to the
 *   numbering would need a migration that computes them again anyway.
 * - listings_near (cell, …): nearest-first reads ranges of cells.
 * - listings_ending (region, expiry, …): ending-soonest reads windows of expiry in the regions a circle meets;
 *   a region is `cell / REGION_DIVISOR`, an index on that expression.
 *
 * Both are partial on "can be active" (not withdrawn, not sold out): a withdrawal or a sell-out leaves them in
 * the statement that records it, with nothing else to keep in step. Both hold what a candidate query reads
 * (SQLite: every column it names, so the table is never read; PostgreSQL: latitude and longitude as keys, checked
 * on the entry, and the rest included).
 */
const REGION_DIVISOR = 16_777_216

const BATCH = 5_000

export async function up(db: Kysely<any>, dialect: DialectName): Promise<void> {
  await sql`alter table listings add column cell bigint`.execute(db)
  const setCells =
    dialect === 'sqlite'
      ? (json: string) => sql`update listings set cell = v.cell
          from (select value ->> 0 as id, value ->> 1 as cell from json_each(${json})) as v
          where listings.id = v.id`
      : (json: string) => sql`update listings set cell = v.cell
          from (select e ->> 0 as id, (e ->> 1)::bigint as cell from jsonb_array_elements(cast(${json} as jsonb)) as e) as v
          where listings.id = v.id`
  for (let after = ''; ;) {
    const { rows } = await sql<{ id: string; latitude: number; longitude: number }>`
      select id, latitude, longitude from listings where id > ${after} order by id limit ${BATCH}`.execute(db)
    if (rows.length === 0) break
    await setCells(JSON.stringify(rows.map((row) => [row.id, cellOf(unitVector(row.latitude, row.longitude))]))).execute(db)
    after = (rows.at(-1) as { id: string }).id
  }

  const active = sql.raw('where withdrawn_at_ms is null and sold_out = 0')
  const region = sql.raw(`(cell / ${REGION_DIVISOR})`)
  if (dialect === 'sqlite') {
    // Covering: SQLite reads only the index when the index holds every column the query names.
    const rest = sql.raw('discount_rate, version, id, withdrawn_at_ms, sold_out')
    await sql`create index listings_near on listings (cell, latitude, longitude, expires_at_unix, ${rest}) ${active}`.execute(db)
    await sql`create index listings_ending on listings (${region}, expires_at_unix, latitude, longitude, ${rest}) ${active}`.execute(db)
    await sql`drop table listing_geo`.execute(db)
  } else {
    // Conditions on key columns are checked on the index entry, before the row is visited.
    const rest = sql.raw('include (discount_rate, version, id)')
    await sql`create index listings_near on listings (cell, latitude, longitude, expires_at_unix) ${rest} ${active}`.execute(db)
    await sql`create index listings_ending on listings (${region}, expires_at_unix, latitude, longitude) ${rest} ${active}`.execute(db)
    await sql`drop index listings_discovery`.execute(db)
  }
}
