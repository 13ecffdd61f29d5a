import type { Kysely } from 'kysely'

/**
 * Claims read each endpoint's due deliveries through webhook_deliveries_endpoint: nothing reads the index of all
 * deliveries by due time, and every delivery written and removed paid for it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_due').execute()
}
