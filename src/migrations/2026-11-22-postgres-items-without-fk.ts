import type { Kysely } from 'kysely'
import type { DialectName } from '../db/connection.js'

/**
 * PostgreSQL: listing_items loses its foreign key to listings. Its per-row trigger looked the listing up again and
 * locked it, a large share of a 100-item create, while the statement holds the provider's counter row. Items are
 * written only with their listing, in the same statement, and nothing deletes listings: the key guarded no write.
 *
 * SQLite keeps its key: there the check is an in-process index probe, and dropping it would mean rebuilding
 * the table.
 */
export async function up(db: Kysely<any>, dialect: DialectName): Promise<void> {
  if (dialect !== 'postgres') return
  await db.schema.alterTable('listing_items').dropConstraint('listing_items_listing_id_fkey').ifExists().execute()
}
