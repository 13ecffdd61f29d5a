import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../db/connection.js'

// Every definition is written out here as it stands after this migration.

/**
 * Keys ready to shard by provider. A tenant-sharded PostgreSQL (Citus)
 * places each row by its provider_id and can enforce a key only when the key holds that column; a foreign key,
 * only between rows it places together. So every key of provider data leads with provider_id:
 *
 * - listings, events, webhook_endpoints, webhook_deliveries: PRIMARY KEY (provider_id, id). Ids stay unique in
 *   practice (they are generated with a time and randomness); the declared key says where a row lives.
 * - webhook_deliveries' indexes by endpoint and by event, and webhook_attempts' by endpoint, lead with it too:
 *   every query of them names its provider.
 * - webhook_attempts gains provider_id (its endpoint's): the log was the one table of provider data without it.
 *   An attempt whose endpoint is gone has no provider to belong to and is not kept (deleting an endpoint removes
 *   its log in the same transaction, so there should be none).
 * - listings_near and listings_ending hold provider_id too: discovery reads each chosen listing again by its
 *   key, and the key now holds the provider.
 *
 * The global indexes the sweeps find due work by (listings_expiry_due, events_created_at, webhook_attempts_at)
 * stay: plain indexes are local to each shard, and reading them across providers without a lock is what a
 * distributed query allows; the locking work then goes provider by provider.
 *
 * SQLite cannot change a table's primary key: each such table is rebuilt (made anew, filled, swapped) with every
 * index it had. PostgreSQL swaps the constraints in place. Either way a large table is rewritten or re-indexed
 * under the migration's lock.
 */
export async function up(db: Kysely<any>, dialect: DialectName): Promise<void> {
  if (dialect === 'sqlite') await sqliteUp(db)
  else await postgresUp(db)
}

const LISTING_COLUMNS = `id, provider_id, seq, reference_id, request_hash, type, discount_rate, is_assigned_to_driver, latitude, longitude,
  brand_name_ar, brand_name_en, brand_url_safe_name, brand_image_url, created_at_ms, expires_at_unix, version, updated_at_ms,
  withdrawn_at_ms, sold_out, expiry_recorded, items_record, cell`

/** A table made anew under its own name from `definition`, filled from the old one by `fill`, then its indexes. */
async function rebuild(db: Kysely<any>, table: string, definition: string, fill: string, indexes: string[]): Promise<void> {
  await sql.raw(`create table ${table}_next (${definition})`).execute(db)
  await sql.raw(`insert into ${table}_next ${fill}`).execute(db)
  await sql.raw(`drop table ${table}`).execute(db)
  await sql.raw(`alter table ${table}_next rename to ${table}`).execute(db)
  for (const index of indexes) await sql.raw(index).execute(db)
}

async function sqliteUp(db: Kysely<any>): Promise<void> {
  // Covering, as before (2026-11-24-discovery-cells), with provider_id among what they hold.
  const active = 'where withdrawn_at_ms is null and sold_out = 0'
  const rest = 'discount_rate, version, id, provider_id, withdrawn_at_ms, sold_out'
  await rebuild(
    db,
    'listings',
    `id text not null, provider_id text not null references providers (id), seq bigint not null, reference_id text not null,
     request_hash text not null, type text not null, discount_rate double precision not null, is_assigned_to_driver integer not null,
     latitude double precision not null, longitude double precision not null, brand_name_ar text not null, brand_name_en text not null,
     brand_url_safe_name text not null, brand_image_url text not null, created_at_ms bigint not null, expires_at_unix bigint not null,
     version bigint default 1 not null, updated_at_ms bigint default 0 not null, withdrawn_at_ms bigint,
     sold_out integer default 0 not null, expiry_recorded integer default 0 not null, items_record text, cell bigint,
     constraint listings_pkey primary key (provider_id, id),
     constraint listings_provider_reference unique (provider_id, reference_id),
     constraint listings_provider_seq unique (provider_id, seq)`,
    `(${LISTING_COLUMNS}) select ${LISTING_COLUMNS} from listings`,
    [
      'create index listings_expiry_due on listings (expires_at_unix) where expiry_recorded = 0 and withdrawn_at_ms is null',
      `create index listings_near on listings (cell, latitude, longitude, expires_at_unix, ${rest}) ${active}`,
      `create index listings_ending on listings ((cell / 16777216), expires_at_unix, latitude, longitude, ${rest}) ${active}`,
    ],
  )
  await rebuild(
    db,
    'events',
    `id text not null, provider_id text not null, seq bigint not null, type text not null, listing_id text not null,
     created_at_ms bigint not null, snapshot text not null,
     constraint events_pkey primary key (provider_id, id),
     constraint events_provider_seq unique (provider_id, seq)`,
    'select id, provider_id, seq, type, listing_id, created_at_ms, snapshot from events',
    ['create index events_created_at on events (created_at_ms)'],
  )
  await rebuild(
    db,
    'webhook_endpoints',
    `id text not null, provider_id text not null, url text not null, event_mask integer not null, status text not null,
     disabled_reason text, created_at_ms bigint not null, secret text not null, previous_secret text,
     previous_secret_until_ms bigint, failing_since_ms bigint,
     constraint webhook_endpoints_pkey primary key (provider_id, id)`,
    `select id, provider_id, url, event_mask, status, disabled_reason, created_at_ms, secret, previous_secret,
       previous_secret_until_ms, failing_since_ms from webhook_endpoints`,
    ['create index webhook_endpoints_provider on webhook_endpoints (provider_id, created_at_ms)'],
  )
  await rebuild(
    db,
    'webhook_deliveries',
    `id text not null, endpoint_id text not null, event_id text not null, provider_id text not null, event_type text not null,
     attempts integer not null, next_attempt_at_ms bigint not null, lease_until_ms bigint, created_at_ms bigint not null,
     constraint webhook_deliveries_pkey primary key (provider_id, id)`,
    `select id, endpoint_id, event_id, provider_id, event_type, attempts, next_attempt_at_ms, lease_until_ms, created_at_ms
       from webhook_deliveries`,
    [
      'create index webhook_deliveries_endpoint on webhook_deliveries (provider_id, endpoint_id, next_attempt_at_ms)',
      'create index webhook_deliveries_event on webhook_deliveries (provider_id, event_id)',
    ],
  )
  await rebuild(
    db,
    'webhook_attempts',
    `endpoint_id text not null, event_id text not null, event_type text not null, attempt integer not null, outcome text not null,
     response_status integer, duration_ms integer not null, at_ms bigint not null, error text, provider_id text not null`,
    `select a.endpoint_id, a.event_id, a.event_type, a.attempt, a.outcome, a.response_status, a.duration_ms, a.at_ms, a.error,
       w.provider_id
       from webhook_attempts a join webhook_endpoints w on w.id = a.endpoint_id`,
    [
      'create index webhook_attempts_endpoint on webhook_attempts (provider_id, endpoint_id, at_ms)',
      'create index webhook_attempts_at on webhook_attempts (at_ms)',
    ],
  )
}

async function postgresUp(db: Kysely<any>): Promise<void> {
  for (const table of ['listings', 'events', 'webhook_endpoints', 'webhook_deliveries']) {
    await sql.raw(`alter table ${table} drop constraint ${table}_pkey, add constraint ${table}_pkey primary key (provider_id, id)`).execute(db)
  }
  await sql`drop index webhook_deliveries_endpoint`.execute(db)
  await sql`create index webhook_deliveries_endpoint on webhook_deliveries (provider_id, endpoint_id, next_attempt_at_ms)`.execute(db)
  await sql`drop index webhook_deliveries_event`.execute(db)
  await sql`create index webhook_deliveries_event on webhook_deliveries (provider_id, event_id)`.execute(db)

  await sql`alter table webhook_attempts add column provider_id text`.execute(db)
  await sql`update webhook_attempts a set provider_id = w.provider_id from webhook_endpoints w where w.id = a.endpoint_id`.execute(db)
  await sql`delete from webhook_attempts where provider_id is null`.execute(db)
  await sql`alter table webhook_attempts alter column provider_id set not null`.execute(db)
  await sql`drop index webhook_attempts_endpoint`.execute(db)
  await sql`create index webhook_attempts_endpoint on webhook_attempts (provider_id, endpoint_id, at_ms)`.execute(db)

  // As before (2026-11-24-discovery-cells), with provider_id among the included columns.
  const active = sql.raw('where withdrawn_at_ms is null and sold_out = 0')
  const rest = sql.raw('include (discount_rate, version, id, provider_id)')
  await sql`drop index listings_near`.execute(db)
  await sql`create index listings_near on listings (cell, latitude, longitude, expires_at_unix) ${rest} ${active}`.execute(db)
  await sql`drop index listings_ending`.execute(db)
  await sql`create index listings_ending on listings ((cell / 16777216), expires_at_unix, latitude, longitude) ${rest} ${active}`.execute(db)
}
