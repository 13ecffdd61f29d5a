import { byProvider } from '../by-provider.js'
import type { JobDatabase, Tx } from '../db/connection.js'
import { onPostgres } from '../db/dialect.js'

/** Events one prune removes at most: bounds each turn. */
export const PRUNE_BATCH = 2000

/** How often every instance prunes: the feed keeps an event at most this much past its retention. */
export const PRUNE_INTERVAL_MS = 10 * 60 * 1000

/**
 * Removes up to `limit` events created before `beforeMs`, with the deliveries they owe and the log of that age;
 * returns how many events. Old rows are found by reads that lock nothing (on a database sharded by owner, each
 * shard answers from its own index), then each owner's go in a transaction of its own.
 */
export async function pruneEvents({ db, transact }: JobDatabase, { beforeMs, limit }: { beforeMs: number; limit: number }): Promise<number> {
  const events = await db.selectFrom('events').select(['owner_id', 'id']).where('created_at_ms', '<', beforeMs).orderBy('created_at_ms').limit(limit).execute()
  // The log has no key to bound a batch by: its oldest rows go with each batch of events, each owner's up to
  // its newest among them, endpoint by endpoint (the log's index is by endpoint).
  const log = await db
    .selectFrom('webhook_attempts')
    .select(['owner_id', 'endpoint_id', 'at_ms'])
    .where('at_ms', '<', beforeMs)
    .orderBy('at_ms')
    .limit(limit)
    .execute()
  const logUntil = new Map(
    byProvider(log, 'owner_id').map(([ownerId, rows]) => [
      ownerId,
      { endpointIds: [...new Set(rows.map((row) => row.endpoint_id))], untilMs: (rows.at(-1) as { at_ms: number }).at_ms },
    ]),
  )
  const eventIds = new Map(byProvider(events, 'owner_id').map(([ownerId, rows]) => [ownerId, rows.map((row) => row.id)]))
  let pruned = 0
  for (const ownerId of [...new Set([...eventIds.keys(), ...logUntil.keys()])].sort()) {
    pruned += await transact(pruneOwner, ownerId, eventIds.get(ownerId) ?? [], logUntil.get(ownerId))
  }
  return pruned
}

/** An owner's log to remove: these endpoints' attempts up to this time. */
interface OldLog {
  endpointIds: string[]
  untilMs: number
}

/** SKIP LOCKED on PostgreSQL: two instances pruning at once remove each row once. */
export async function pruneOwner(tx: Tx, ownerId: string, eventIds: readonly string[], log: OldLog | undefined): Promise<number> {
  if (log) {
    await tx
      .deleteFrom('webhook_attempts')
      .where('owner_id', '=', ownerId)
      .where('endpoint_id', 'in', log.endpointIds)
      .where('at_ms', '<=', log.untilMs)
      .execute()
  }
  if (eventIds.length === 0) return 0
  const old = await tx
    .selectFrom('events')
    .select('id')
    .where('owner_id', '=', ownerId)
    .where('id', 'in', eventIds)
    .$if(onPostgres(tx), (qb) => qb.forUpdate().skipLocked())
    .execute()
  if (old.length === 0) return 0
  const ids = old.map((row) => row.id)
  await tx.deleteFrom('webhook_deliveries').where('owner_id', '=', ownerId).where('event_id', 'in', ids).execute()
  await tx.deleteFrom('events').where('owner_id', '=', ownerId).where('id', 'in', ids).execute()
  return old.length
}
