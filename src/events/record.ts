import { execute, queryOne, type Script, type ScriptSql } from '../db/script.js'
import { prefixedId } from '../ids.js'
import type { ListingState } from '../listings/listing-state.js'
import { eventBit } from '../webhooks/event-mask.js'
import type { EventType } from './types.js'

/*
 * The outbox (docs/api.md#events): every change of a listing writes its event inside the change's own transaction,
 * so there is never a change without its event nor an event without its change. Loaded by the SQLite writer
 * thread: no Kysely.
 */

export { EventTypes, type EventType } from './types.js'

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
    yield* execute(DELIVER_ONE, [row.id, row.id, row.type, nowMs, nowMs, providerId, eventBit(row.type)])
    return
  }
  yield* execute(
    `insert into events (id, provider_id, seq, type, listing_id, created_at_ms, snapshot)
     select e.id, cast(? as text), e.seq, e.type, e.listing_id, cast(? as bigint), e.snapshot
     from ${d.jsonRows('e', { id: 'text', seq: 'bigint', type: 'text', listing_id: 'text', snapshot: 'text' })}`,
    [providerId, nowMs, JSON.stringify(rows)],
  )
  yield* execute(
    `insert into webhook_deliveries (${DELIVERY_COLUMNS})
     select w.id || ':' || e.id, w.id, e.id, w.provider_id, e.type, 0, cast(? as bigint), cast(? as bigint)
     from webhook_endpoints w join ${d.jsonRows('e', { id: 'text', type: 'text', bit: 'integer' })} on (w.event_mask & e.bit) <> 0
     where w.provider_id = ? and w.status = 'enabled'`,
    [nowMs, nowMs, JSON.stringify(rows.map((row) => ({ id: row.id, type: row.type, bit: eventBit(row.type) }))), providerId],
  )
}

const DELIVERY_COLUMNS = 'id, endpoint_id, event_id, provider_id, event_type, attempts, next_attempt_at_ms, created_at_ms'

/**
 * The webhook deliveries an event owes (docs/api.md#events: every endpoint enabled and subscribed to its type when it
 * commits), written with the event: a delivery can never be lost between the two. Its first attempt is due at
 * once. For a provider without endpoints this is one probe of an empty index range.
 */
const DELIVER_ONE = `insert into webhook_deliveries (${DELIVERY_COLUMNS})
  select w.id || ':' || cast(? as text), w.id, cast(? as text), w.provider_id, cast(? as text), 0, cast(? as bigint), cast(? as bigint)
  from webhook_endpoints w
  where w.provider_id = ? and w.status = 'enabled' and (w.event_mask & cast(? as integer)) <> 0`
