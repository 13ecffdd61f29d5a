import { sql, type Kysely } from 'kysely'

/**
 * Event streams and webhook endpoints of two kinds of owner: a provider (its listings, the reservations on them)
 * or a marketplace (its reservations). One feed and one delivery path serve both, so the stream's tables name
 * their owner, not a provider: provider_id becomes owner_id in events, webhook_endpoints, webhook_deliveries and
 * webhook_attempts. Provider and marketplace ids never collide (`prv_…`, `mkt_…`), so the id alone says whose.
 * A rename changes no row and keeps every key and index, which hold the renamed column in its place: each still
 * leads with the owner (on a sharded database, a marketplace's stream is placed by its id as a provider's is).
 * Index and constraint names stay as they were: a name is not a key.
 *
 * marketplaces.event_count: a marketplace's counter, the dense seq of its stream, as providers.event_count is a
 * provider's.
 *
 * An endpoint made without `events` receives every type, also those added later: its mask is now -1 (every bit).
 * A mask of 15 was every type there was (the four listing types), so those endpoints become -1 too.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['events', 'webhook_endpoints', 'webhook_deliveries', 'webhook_attempts']) {
    await sql`alter table ${sql.table(table)} rename column provider_id to owner_id`.execute(db)
  }
  await sql`alter table marketplaces add column event_count bigint not null default 0`.execute(db)
  await sql`update webhook_endpoints set event_mask = -1 where event_mask = 15`.execute(db)
}
