import { execute, query, type Script, type ScriptSql } from '../db/script.js'

/*
 * EVENT_RETENTION_DAYS (docs/api.md#events): events older than that are removed, with the deliveries they still owe
 * and the delivery log of that age. A write script (db/script.ts), run in bounded batches by every instance
 * (background.ts); two instances pruning at once remove each row once. Loaded by the SQLite writer thread.
 */

/** Rows one transaction removes at most: bounds how long it holds the writer. */
export const PRUNE_BATCH = 2000

/** How often every instance prunes: the feed keeps an event at most this much past its retention. */
export const PRUNE_INTERVAL_MS = 10 * 60 * 1000

/** Removes up to `limit` events created before `beforeMs`, and the log of that age; returns how many events. */
export function* pruneEvents(d: ScriptSql, { beforeMs, limit }: { beforeMs: number; limit: number }): Script<number> {
  const old = yield* query<{ id: string }>(`select id from events where created_at_ms < ? order by created_at_ms limit ?${d.forUpdateSkipLocked}`, [
    beforeMs,
    limit,
  ])
  // The log has no key of its own to bound a batch by: the oldest rows go with each batch of events.
  yield* execute('delete from webhook_attempts where at_ms < ? and at_ms <= (select coalesce(max(at_ms), 0) from (select at_ms from webhook_attempts where at_ms < ? order by at_ms limit ?) as oldest)', [
    beforeMs,
    beforeMs,
    limit,
  ])
  if (old.length === 0) return 0
  const ids = JSON.stringify(old.map((row) => row.id))
  yield* execute(`delete from webhook_deliveries where ${d.inJsonList('event_id')}`, [ids])
  yield* execute(`delete from events where ${d.inJsonList('id')}`, [ids])
  return old.length
}
