import type { Kysely } from 'kysely'
import type { DialectName } from '../db/connection.js'

/**
 * PostgreSQL: listing_items no longer has a foreign key to listings. The key was checked for every item row, by
 * a trigger looking the same listing up again and locking it: in a batch of eleven 100-item creates that was
 * 4.4 ms of the statement's 9.4 ms (auto_explain, 2026-11-22), and the statement holds the provider's counter
 * row, so it bounded one provider's 100-item creates to ~500/s. Items are written only by the create statement
 * (postgres-writer.ts), in the same statement as their listing, and nothing deletes listings: the key guarded
 * no write the service makes. test/consistency.test.ts checks that no item is without its listing.
 *
 * SQLite keeps its key: there the check is an in-process index probe, and dropping it would mean rebuilding
 * the table.
 */
export async function up(db: Kysely<any>, dialect: DialectName): Promise<void> {
  if (dialect !== 'postgres') return
  await db.schema.alterTable('listing_items').dropConstraint('listing_items_listing_id_fkey').ifExists().execute()
}
