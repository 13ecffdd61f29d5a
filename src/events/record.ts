import { execute, queryOne, type Script, type ScriptSql } from '../db/script.js'
import { prefixedId } from '../ids.js'
import type { ListingState } from '../listings/listing-state.js'

/*
 * The outbox (contract §11): every change of a listing writes its event inside the change's own transaction,
 * so there is never a change without its event nor an event without its change. Loaded by the SQLite writer
 * thread: no Kysely.
 */

export const EventTypes = ['listing.created', 'listing.updated', 'listing.withdrawn', 'listing.expired'] as const
export type EventType = (typeof EventTypes)[number]

export interface NewEvent {
  type: EventType
  /** The listing right after the change. */
  listing: ListingState
}

/**
 * Writes one provider's events of one transaction. Their seq comes from the provider's event_count, bumped
 * here: the row stays locked until this transaction commits (PostgreSQL; on SQLite the whole database is), so
 * the next transaction of the same provider reads the count only after this one committed. seq order is
 * therefore commit order, and a feed reader that has seen seq N has seen every event up to N.
 *
 * A script taking locks on listings first and the provider last (changes, the sweeper) never waits on a
 * provider while another script waits on one of its listings: creates lock only the provider.
 */
export function* recordEvents(d: ScriptSql, providerId: string, nowMs: number, events: readonly NewEvent[]): Script<void> {
  if (events.length === 0) return
  const counter = yield* queryOne<{ event_count: number }>(
    'update providers set event_count = event_count + ? where id = ? returning event_count',
    [events.length, providerId],
  )
  if (!counter) throw new Error(`provider ${providerId} does not exist`)
  const first = counter.event_count - events.length + 1
  const rows = events.map((event, i) => ({
    id: prefixedId('evt', nowMs),
    seq: first + i,
    type: event.type,
    listing_id: event.listing.id,
    snapshot: JSON.stringify(event.listing),
  }))
  if (rows.length === 1) {
    // The common case (one change), without the JSON array around it.
    const [row] = rows as [(typeof rows)[number]]
    yield* execute(
      'insert into events (id, provider_id, seq, type, listing_id, created_at_ms, snapshot) values (?, ?, ?, ?, ?, ?, ?)',
      [row.id, providerId, row.seq, row.type, row.listing_id, nowMs, row.snapshot],
    )
    return
  }
  yield* execute(
    `insert into events (id, provider_id, seq, type, listing_id, created_at_ms, snapshot)
     select e.id, cast(? as text), e.seq, e.type, e.listing_id, cast(? as bigint), e.snapshot
     from ${d.jsonRows('e', { id: 'text', seq: 'bigint', type: 'text', listing_id: 'text', snapshot: 'text' })}`,
    [providerId, nowMs, JSON.stringify(rows)],
  )
}
