import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { ListingState } from '../listings/listing-state.js'
import { listingView } from '../listings/listing-view.js'
import type { EventType } from './record.js'
import type { Event } from './schemas.js'

export interface EventRow {
  id: string
  seq: number
  type: string
  created_at_ms: number
  snapshot: string
}

/** An event as the feed and webhook deliveries send it: its data is the listing as read at the event's time. */
export function eventOf(row: EventRow, industry: string): Event {
  return {
    id: row.id,
    type: row.type as EventType,
    createdAt: new Date(row.created_at_ms).toISOString(),
    data: listingView(JSON.parse(row.snapshot) as ListingState, industry, row.created_at_ms),
  }
}

/**
 * GET /api/v1/events: a provider's events after a given one, in seq order. seq is dense and in commit order
 * per provider (record.ts), so "seq greater than the last one seen" never skips an event, whatever order
 * concurrent writers, on any instance, took their turns in.
 */
export class EventFeed {
  readonly #seqOf: PreparedQuery<{ providerId: string; eventId: string }, { seq: number }>
  readonly #after: PreparedQuery<{ providerId: string; afterSeq: number; limit: number }, EventRow>

  constructor(database: Database) {
    this.#seqOf = new PreparedQuery(database.kysely, (db, param) =>
      db.selectFrom('events').select('seq').where('id', '=', param('eventId')).where('provider_id', '=', param('providerId')),
    )
    this.#after = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('events')
        .select(['id', 'seq', 'type', 'created_at_ms', 'snapshot'])
        .where('provider_id', '=', param('providerId'))
        .where('seq', '>', param('afterSeq'))
        .orderBy('seq')
        .limit(param('limit')),
    )
  }

  /** The events after `after` (from the first kept when absent), or undefined when `after` is not one of the provider's. */
  async page(providerId: string, after: string | undefined, limit: number): Promise<EventRow[] | undefined> {
    let afterSeq = 0
    if (after !== undefined) {
      const [found] = await this.#seqOf.execute({ providerId, eventId: after })
      if (!found) return undefined
      afterSeq = found.seq
    }
    return this.#after.execute({ providerId, afterSeq, limit })
  }
}
