import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../db/connection.js'

/**
 * Listings change after their creation and every change is an event.
 *
 * listings gains its version, its last change, the withdrawal, a sold-out flag for pages (derived from the
 * quantities, kept by the writers), whether its expiry has been recorded, and items_record: its items with every
 * column (the JSON of listing_items' rows, position order), so one row is the whole listing for a read, a change
 * or an event. listing_items stays the complete record and is updated with it.
 *
 * events is the outbox: a row per change, written in the change's transaction. seq is dense per provider and
 * taken from providers.event_count, bumped in that same transaction: the provider's row stays locked until the
 * commit, so one provider's events get their seq in commit order, and a reader following seq never passes an
 * event that commits later with a smaller one.
 *
 * Upgrading: stop instances of the previous version first. They would write listings without events.
 * Listings already expired when this runs get their expiry recorded here (version 2, updated at the moment
 * they expired), without an event: the feed starts with what happens after the upgrade.
 */
export async function up(db: Kysely<any>, dialect: DialectName): Promise<void> {
  await db.schema
    .alterTable('listings')
    .addColumn('version', 'bigint', (c) => c.notNull().defaultTo(1))
    .execute()
  await db.schema
    .alterTable('listings')
    .addColumn('updated_at_ms', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.alterTable('listings').addColumn('withdrawn_at_ms', 'bigint').execute()
  await db.schema
    .alterTable('listings')
    .addColumn('sold_out', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema
    .alterTable('listings')
    .addColumn('expiry_recorded', 'integer', (c) => c.notNull().defaultTo(0))
    .execute()
  await db.schema.alterTable('listings').addColumn('items_record', 'text').execute()

  await sql`update listings set updated_at_ms = created_at_ms`.execute(db)
  const nowUnix = Math.floor(Date.now() / 1000)
  await sql`update listings set version = 2, updated_at_ms = expires_at_unix * 1000, expiry_recorded = 1
            where expires_at_unix <= ${nowUnix}`.execute(db)

  if (dialect === 'sqlite') {
    await sql`update listings set items_record = (
      select json_group_array(json_object(
        'position', position, 'name_ar', name_ar, 'name_en', name_en, 'url_safe_name', url_safe_name,
        'image_url', image_url, 'category', category, 'sub_category', sub_category,
        'price_thousandths', price_thousandths, 'quantity', quantity) order by position)
      from listing_items where listing_id = listings.id)`.execute(db)
  } else {
    await sql`update listings set items_record = (
      select json_agg(json_build_object(
        'position', position, 'name_ar', name_ar, 'name_en', name_en, 'url_safe_name', url_safe_name,
        'image_url', image_url, 'category', category, 'sub_category', sub_category,
        'price_thousandths', price_thousandths, 'quantity', quantity) order by position)::text
      from listing_items where listing_id = listings.id)`.execute(db)
  }

  // The expiry sweeper's question, "which listings have expired and not been recorded as such", as an index
  // range that holds only the listings still to expire.
  await db.schema
    .createIndex('listings_expiry_due')
    .on('listings')
    .column('expires_at_unix')
    .where(sql.ref('expiry_recorded'), '=', 0)
    .where(sql.ref('withdrawn_at_ms'), 'is', null)
    .execute()

  await db.schema
    .alterTable('providers')
    .addColumn('event_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()

  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider_id', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('listing_id', 'text', (c) => c.notNull())
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    // The listing right after the change, as a ListingState in JSON.
    .addColumn('snapshot', 'text', (c) => c.notNull())
    // The feed is a range of this index, as pages are of listings_provider_seq.
    .addUniqueConstraint('events_provider_seq', ['provider_id', 'seq'])
    .execute()
  // Retention removes the oldest events.
  await db.schema.createIndex('events_created_at').on('events').column('created_at_ms').execute()
}
