import type { Kysely } from 'kysely'
import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { PositionedRead, ReadYourWrites } from '../db/read-your-writes.js'
import type { Tables } from '../db/tables.js'
import type { ListingState } from '../listings/listing-state.js'
import { listingView } from '../listings/listing-view.js'
import type { EventType } from './types.js'
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

/** A row of the standby's feed: the provider's position, and an event unless none follows. */
type PositionedEventRow = { event_count: number } & { [K in keyof EventRow]: EventRow[K] | null }

const seqOfQuery = (on: Kysely<Tables>) =>
  new PreparedQuery<{ providerId: string; eventId: string }, { seq: number }>(on, (db, param) =>
    db.selectFrom('events').select('seq').where('id', '=', param('eventId')).where('provider_id', '=', param('providerId')),
  )

/**
 * The standby's events after a seq, with the provider's position read in the same statement: the provider's row
 * comes back even when no event follows, so "not replayed yet" is told apart from "nothing new".
 */
const positionedAfterQuery = (on: Kysely<Tables>) =>
  new PreparedQuery<{ providerId: string; afterSeq: number; limit: number }, PositionedEventRow>(on, (db, param) =>
    db
      .selectFrom('providers as p')
      .leftJoin('events as e', (join) => join.onRef('e.provider_id', '=', 'p.id').on('e.seq', '>', param('afterSeq')))
      .select(['p.event_count', 'e.id', 'e.seq', 'e.type', 'e.created_at_ms', 'e.snapshot'])
      .where('p.id', '=', param('providerId'))
      .orderBy('e.seq')
      .limit(param('limit')),
  )

interface StandbyFeed {
  reads: ReadYourWrites
  seqOf: ReturnType<typeof seqOfQuery>
  after: ReturnType<typeof positionedAfterQuery>
}

/**
 * A provider's events after a given one. seq is dense and in commit order per provider (recordEvents), so "seq
 * greater than the last one seen" never skips an event, whatever order concurrent writers took their turns in.
 */
export class EventFeed {
  readonly #seqOf: PreparedQuery<{ providerId: string; eventId: string }, { seq: number }>
  readonly #after: PreparedQuery<{ providerId: string; afterSeq: number; limit: number }, EventRow>
  /** DATABASE_READ_URL: read from the standby once it has replayed the provider's writes. */
  readonly #standby?: StandbyFeed

  constructor(database: Database, reads?: ReadYourWrites) {
    this.#seqOf = seqOfQuery(database.kysely)
    this.#after = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('events')
        .select(['id', 'seq', 'type', 'created_at_ms', 'snapshot'])
        .where('provider_id', '=', param('providerId'))
        .where('seq', '>', param('afterSeq'))
        .orderBy('seq')
        .limit(param('limit')),
    )
    if (reads) this.#standby = { reads, seqOf: seqOfQuery(reads.replica), after: positionedAfterQuery(reads.replica) }
  }

  /** The events after `after` (from the first kept when absent), or undefined when `after` is not one of the provider's. */
  async page(providerId: string, after: string | undefined, limit: number): Promise<EventRow[] | undefined> {
    const onPrimary = async () => {
      const afterSeq = after === undefined ? 0 : (await this.#seqOf.execute({ providerId, eventId: after }))[0]?.seq
      return afterSeq === undefined ? undefined : this.#after.execute({ providerId, afterSeq, limit })
    }
    const standby = this.#standby
    if (!standby) return onPrimary()
    return standby.reads.read(providerId, () => this.#onStandby(standby, providerId, after, limit), onPrimary)
  }

  /**
   * A cursor the standby does not know may be one it has not replayed yet: the primary decides (never a 400 for a
   * cursor the client was given). The second statement's position covers the first: the standby only moves forward.
   */
  async #onStandby(standby: StandbyFeed, providerId: string, after: string | undefined, limit: number): Promise<PositionedRead<EventRow[]> | undefined> {
    let afterSeq = 0
    if (after !== undefined) {
      const [found] = await standby.seqOf.execute({ providerId, eventId: after })
      if (!found) return undefined
      afterSeq = found.seq
    }
    const rows = await standby.after.execute({ providerId, afterSeq, limit })
    return { position: rows[0]?.event_count, value: rows.filter((row): row is PositionedEventRow & EventRow => row.id !== null) }
  }
}
