import type { Kysely } from 'kysely'

/**
 * Claims ask each endpoint for its own due deliveries (webhooks/delivery-scripts.ts), through
 * webhook_deliveries_endpoint (endpoint_id, next_attempt_at_ms). The index of all deliveries by due time served
 * the earlier claim, which read them in due order across endpoints; nothing reads it now, and every create with
 * an endpoint paid for it (one more B-tree written per delivery, and again when it is removed).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_due').execute()
}
