import type { Kysely } from 'kysely'
import { onPostgres } from '../db/dialect.js'
import type { Tables } from '../db/tables.js'

/*
 * EVENT_RETENTION_DAYS (docs/api.md#events): events older than that are removed, with the deliveries they still
 * owe and the delivery log of that age, in bounded batches by every instance (background.ts); two instances
 * pruning at once remove each row once.
 */

/** Rows one transaction removes at most: bounds how long it holds its locks. */
export const PRUNE_BATCH = 2000

/** How often every instance prunes: the feed keeps an event at most this much past its retention. */
export const PRUNE_INTERVAL_MS = 10 * 60 * 1000

/** Removes up to `limit` events created before `beforeMs`, and the log of that age; returns how many events. */
export function pruneEvents(db: Kysely<Tables>, { beforeMs, limit }: { beforeMs: number; limit: number }): Promise<number> {
  return db.transaction().execute(async (tx) => {
    const old = await tx
      .selectFrom('events')
      .select('id')
      .where('created_at_ms', '<', beforeMs)
      .orderBy('created_at_ms')
      .limit(limit)
      .$if(onPostgres(tx), (qb) => qb.forUpdate().skipLocked())
      .execute()
    // The log has no key of its own to bound a batch by: the oldest rows go with each batch of events.
    await tx
      .deleteFrom('webhook_attempts')
      .where('at_ms', '<', beforeMs)
      .where('at_ms', '<=', (eb) =>
        eb
          .selectFrom(eb.selectFrom('webhook_attempts').select('at_ms').where('at_ms', '<', beforeMs).orderBy('at_ms').limit(limit).as('oldest'))
          .select((o) => o.fn.coalesce(o.fn.max('oldest.at_ms'), o.lit(0)).as('edge')),
      )
      .execute()
    if (old.length === 0) return 0
    const ids = old.map((row) => row.id)
    await tx.deleteFrom('webhook_deliveries').where('event_id', 'in', ids).execute()
    await tx.deleteFrom('events').where('id', 'in', ids).execute()
    return old.length
  })
}
