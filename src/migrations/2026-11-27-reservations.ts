import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../db/connection.js'

/**
 * Stock and reservations (docs/design/0017-stock-accounting.md).
 *
 * - listings.held_record: each item's held units as a JSON array by position, counting the reservations marked
 *   `counted`; null when none is. listings.holds_expire_ms: the earliest expiry among them (null when none), so a
 *   reader knows whether the sum is exact now or holds have run out since. listings.full_until_ms: set while every
 *   item's units are all held, to the instant the first of those holds runs out (and with it the listing is
 *   discoverable again); discovery leaves a listing out while now < full_until_ms.
 * - listings_id: a marketplace names a listing by id alone.
 * - reservations: a provider's data, keyed (provider_id, id); marketplace_reservations: a marketplace's index of
 *   its own, keyed by the marketplace (its referenceId is unique there).
 * - Discovery's indexes are made again holding the three new columns, so a candidate query still reads no table.
 */
export async function up(db: Kysely<any>, dialect: DialectName): Promise<void> {
  const big = sql.raw('bigint')
  await sql`alter table listings add column held_record text`.execute(db)
  await sql`alter table listings add column holds_expire_ms ${big}`.execute(db)
  await sql`alter table listings add column full_until_ms ${big}`.execute(db)
  await sql`create index listings_id on listings (id)`.execute(db)

  await sql`create table reservations (
    provider_id text not null,
    id text not null,
    marketplace_id text not null,
    reference_id text not null,
    request_hash text not null,
    listing_id text not null,
    status text not null,
    version integer not null,
    items_record text not null,
    discount_rate double precision not null,
    created_at_ms ${big} not null,
    updated_at_ms ${big} not null,
    expires_at_ms ${big} not null,
    ended_by text,
    counted integer not null,
    primary key (provider_id, id))`.execute(db)
  await sql`create index reservations_of_listing on reservations (provider_id, listing_id, created_at_ms, id)`.execute(db)
  await sql`create index reservations_of_provider on reservations (provider_id, created_at_ms, id)`.execute(db)
  await sql`create index reservations_counted on reservations (provider_id, listing_id, expires_at_ms) where counted = 1`.execute(db)
  await sql`create index reservations_due on reservations (expires_at_ms) where status = 'held'`.execute(db)

  await sql`create table marketplace_reservations (
    marketplace_id text not null,
    reference_id text not null,
    reservation_id text not null,
    provider_id text not null,
    listing_id text not null,
    created_at_ms ${big} not null,
    primary key (marketplace_id, reference_id))`.execute(db)
  await sql`create unique index marketplace_reservations_id on marketplace_reservations (marketplace_id, reservation_id)`.execute(db)
  await sql`create index marketplace_reservations_created on marketplace_reservations (marketplace_id, created_at_ms, reservation_id)`.execute(db)

  const active = sql.raw('where withdrawn_at_ms is null and sold_out = 0')
  const region = sql.raw('(cell / 16777216)')
  await sql`drop index listings_near`.execute(db)
  await sql`drop index listings_ending`.execute(db)
  if (dialect === 'sqlite') {
    const rest = sql.raw('discount_rate, version, id, withdrawn_at_ms, sold_out, provider_id, held_record, holds_expire_ms, full_until_ms')
    await sql`create index listings_near on listings (cell, latitude, longitude, expires_at_unix, ${rest}) ${active}`.execute(db)
    await sql`create index listings_ending on listings (${region}, expires_at_unix, latitude, longitude, ${rest}) ${active}`.execute(db)
  } else {
    const rest = sql.raw('include (discount_rate, version, id, provider_id, held_record, holds_expire_ms, full_until_ms)')
    await sql`create index listings_near on listings (cell, latitude, longitude, expires_at_unix) ${rest} ${active}`.execute(db)
    await sql`create index listings_ending on listings (${region}, expires_at_unix, latitude, longitude) ${rest} ${active}`.execute(db)
  }
}
