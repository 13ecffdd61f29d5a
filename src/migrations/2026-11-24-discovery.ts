import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../db/connection.js'

// Its SQL and constants are written out here, not imported, so that a later change cannot change what it did.
// 2026-11-24-discovery-cells drops its spatial index.

/** The expiry coordinate: seconds since 2026-01-01, scaled so that an hour spans what 10 km does on the unit sphere. */
const EXPIRY_EPOCH_UNIX = 1_767_225_600
const EXPIRY_SCALE = 10_000 / 6_371_008.8 / 3600

/**
 * Discovery.
 *
 * marketplaces and marketplace_tokens: the second kind of client, with tokens of its own (same shape and
 * hashing as providers' tokens; `token revoke` revokes either kind).
 *
 * The spatial index of listings by their 4-D point (unit sphere x, y, z and scaled expiry).
 * SQLite: the R*Tree listing_geo, filled here from the listings that can still be discovered (not withdrawn, not
 * expired), then by every create. PostgreSQL: the `cube` extension and a partial GiST expression index; creating
 * an extension needs a role allowed to (a superuser, or the database owner for trusted extensions; `cube` is
 * trusted since PostgreSQL 13).
 */
export async function up(db: Kysely<any>, dialect: DialectName): Promise<void> {
  await db.schema
    .createTable('marketplaces')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .execute()
  await db.schema
    .createTable('marketplace_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('marketplace_id', 'text', (c) => c.notNull().references('marketplaces.id'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at_ms', 'bigint')
    .execute()

  const nowUnix = Math.floor(Date.now() / 1000)
  if (dialect === 'sqlite') {
    await sql`create virtual table listing_geo using rtree(id, x0, x1, y0, y1, z0, z1, t0, t1, +listing_id text)`.execute(db)
    await sql`insert into listing_geo (x0, x1, y0, y1, z0, z1, t0, t1, listing_id)
      select x, x, y, y, z, z, t, t, id from (
        select id,
          cos(radians(latitude)) * cos(radians(longitude)) as x,
          cos(radians(latitude)) * sin(radians(longitude)) as y,
          sin(radians(latitude)) as z,
          (expires_at_unix - ${sql.lit(EXPIRY_EPOCH_UNIX)}) * ${sql.lit(EXPIRY_SCALE)} as t
        from listings where withdrawn_at_ms is null and expires_at_unix > ${nowUnix})`.execute(db)
  } else {
    await sql`create extension if not exists cube`.execute(db)
    // Magnitudes below 1e-200 degrees are read as 0: PostgreSQL raises on a float8 product that underflows to 0,
    // and an index expression that raises fails the insert.
    const lat = '(case when abs(latitude) < 1e-200 then 0 else latitude end)'
    const lon = '(case when abs(longitude) < 1e-200 then 0 else longitude end)'
    await sql
      .raw(
        `create index listings_discovery on listings using gist ((cube(array[
      cos(radians(${lat})) * cos(radians(${lon})),
      cos(radians(${lat})) * sin(radians(${lon})),
      sin(radians(${lat})),
      (expires_at_unix - ${EXPIRY_EPOCH_UNIX})::float8 * ${EXPIRY_SCALE}::float8])))
      where withdrawn_at_ms is null and sold_out = 0`,
      )
      .execute(db)
  }
}
