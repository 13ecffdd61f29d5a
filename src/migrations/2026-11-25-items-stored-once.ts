import type { Kysely } from 'kysely'

/**
 * A listing's items are stored once: `listings.items_record`, every column of every item, read and written with
 * the listing's row. The two other copies go: `items_json` (the page's view of the items, now made from
 * items_record when a page is read) and the `listing_items` table (one row per item, which nothing read).
 * Every listing has had items_record since 2026-11-23-listing-lifecycle, which filled it for older rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').dropColumn('items_json').execute()
  await db.schema.dropTable('listing_items').execute()
}
