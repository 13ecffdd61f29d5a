import type { Kysely } from 'kysely'

/**
 * Webhooks.
 *
 * webhook_endpoints: a provider's receivers. event_mask has one bit per event type each wants, so the outbox can
 * pick an event's endpoints with one indexed statement inside the change's own transaction. The signing secret is
 * kept as issued (HMAC needs it); after a rotation the previous one signs too until previous_secret_until_ms.
 * failing_since_ms starts the current unbroken run of failures: a long enough run disables the endpoint.
 *
 * webhook_deliveries: the deliveries still owed, one row per event and endpoint, written in the event's
 * transaction, so an event is never without them. A worker on any instance claims a due row by setting
 * lease_until_ms; the row is due again for another instance only once the lease has passed, which is how an
 * attempt cut off by a crash is made again. A delivery that succeeded or failed for good is removed, so the table
 * stays small.
 *
 * webhook_attempts: the delivery log, one row per attempt made.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider_id', 'text', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('event_mask', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('disabled_reason', 'text')
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_until_ms', 'bigint')
    .addColumn('failing_since_ms', 'bigint')
    .execute()
  await db.schema.createIndex('webhook_endpoints_provider').on('webhook_endpoints').columns(['provider_id', 'created_at_ms']).execute()

  await db.schema
    .createTable('webhook_deliveries')
    // endpoint_id ':' event_id: made in SQL by the statements that fan an event out.
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('provider_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('lease_until_ms', 'bigint')
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .execute()
  // The worker's question: what is due.
  await db.schema.createIndex('webhook_deliveries_due').on('webhook_deliveries').column('next_attempt_at_ms').execute()
  // An endpoint's pending deliveries (its log; removed with it).
  await db.schema.createIndex('webhook_deliveries_endpoint').on('webhook_deliveries').columns(['endpoint_id', 'next_attempt_at_ms']).execute()
  // Retention removes deliveries with their events.
  await db.schema.createIndex('webhook_deliveries_event').on('webhook_deliveries').column('event_id').execute()

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('endpoint_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('at_ms', 'bigint', (c) => c.notNull())
    .addColumn('error', 'text')
    .execute()
  await db.schema.createIndex('webhook_attempts_endpoint').on('webhook_attempts').columns(['endpoint_id', 'at_ms']).execute()
  await db.schema.createIndex('webhook_attempts_at').on('webhook_attempts').column('at_ms').execute()
}
