import { sql } from 'kysely'
import type { Tx } from '../db/connection.js'
import { prefixedId } from '../ids.js'
import type { ListingState } from '../listings/listing-state.js'
import { eventBit } from '../webhooks/event-mask.js'
import type { EventType } from './types.js'

/* The outbox: every change of a listing writes its event in the change's own transaction, so neither exists without the other. */

export interface NewEvent {
  type: EventType
  /** The listing right after the change. */
  listing: ListingState
}

/**
 * Writes one provider's events of one transaction, seq from the provider's event_count bumped here. The row stays
 * locked until commit (on SQLite the whole database is), so seq order is commit order: a feed reader that has seen
 * seq N has seen every event up to N.
 *
 * Listings are locked first and the provider last (creates lock only the provider), so no deadlock.
 */
export async function recordEvents(tx: Tx, providerId: string, nowMs: number, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return
  const counter = await tx
    .updateTable('providers')
    .set((eb) => ({ event_count: eb('event_count', '+', events.length) }))
    .where('id', '=', providerId)
    .returning('event_count')
    .executeTakeFirst()
  if (!counter) throw new Error(`provider ${providerId} does not exist`)
  await insertEvents(tx, providerId, counter.event_count - events.length + 1, nowMs, events)
}

/**
 * The events' rows, seq from `firstSeq` on (the caller has bumped event_count), and the webhook deliveries each
 * owes, due at once: one per endpoint enabled and subscribed when it commits, written with the event so none is lost.
 */
export async function insertEvents(tx: Tx, providerId: string, firstSeq: number, nowMs: number, events: readonly NewEvent[]): Promise<void> {
  const rows = events.map((event, i) => ({
    id: prefixedId('evt', nowMs),
    provider_id: providerId,
    seq: firstSeq + i,
    type: event.type,
    listing_id: event.listing.id,
    created_at_ms: nowMs,
    snapshot: JSON.stringify(event.listing),
  }))
  await tx.insertInto('events').values(rows).execute()
  for (const type of new Set(rows.map((row) => row.type))) {
    await tx
      .insertInto('webhook_deliveries')
      .columns(['id', 'endpoint_id', 'event_id', 'provider_id', 'event_type', 'attempts', 'next_attempt_at_ms', 'created_at_ms'])
      .expression((eb) =>
        eb
          .selectFrom('webhook_endpoints as w')
          .innerJoin('events as e', 'e.provider_id', 'w.provider_id')
          .select([
            sql<string>`w.id || ':' || e.id`.as('id'),
            'w.id as endpoint_id',
            'e.id as event_id',
            'w.provider_id',
            'e.type as event_type',
            sql.lit(0).as('attempts'),
            eb.cast<number>(eb.val(nowMs), 'bigint').as('next_attempt_at_ms'),
            eb.cast<number>(eb.val(nowMs), 'bigint').as('created_at_ms'),
          ])
          .where('w.provider_id', '=', providerId)
          .where('w.status', '=', 'enabled')
          .where((web) => web(web('w.event_mask', '&', eventBit(type)), '<>', 0))
          .where('e.seq', '>=', firstSeq)
          .where('e.seq', '<', firstSeq + rows.length)
          .where('e.type', '=', type),
      )
      .execute()
  }
}
