import { randomBytes } from 'node:crypto'
import type { Kysely } from 'kysely'

/**
 * Keys the service signs with, shared by every instance on this database; the first signs discovery cursors.
 * Made here, once, under the migration lock, so instances starting together agree on it without a race.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('service_keys')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('secret', 'text', (c) => c.notNull())
    .execute()
  await db
    .insertInto('service_keys')
    .values({ name: 'discovery-cursor', secret: randomBytes(32).toString('base64url') })
    .execute()
}
