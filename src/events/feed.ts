import type { ReservationView } from '../reservations/schemas.js'
import type { Kysely } from 'kysely'
import type { Database } from '../db/connection.js'
import { ownerKey } from '../db/dialect.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { PositionedRead, ReadYourWrites } from '../db/read-your-writes.js'
import type { Tables } from '../db/tables.js'
import type { ListingState } from '../listings/listing-state.js'
import { listingView } from '../listings/listing-view.js'
import { ownerTable, type Owner } from './owner.js'
import { isListingEvent, type EventType } from './types.js'
import type { Event } from './schemas.js'

export interface EventRow {
  id: string
  seq: number
  type: string
  created_at_ms: number
  snapshot: string
}

/**
 * An event as the feed and webhook deliveries send it. A listing event's data is the listing as read at the
 * event's time, its brand's industry the provider's; any other event's data is its snapshot as stored. Listing
 * events are only ever in a provider's stream: one without an industry is a wiring bug.
 */
export function eventOf(row: EventRow, industry: string | null): Event {
  const type = row.type as EventType
  const head = { id: row.id, createdAt: new Date(row.created_at_ms).toISOString() }
  if (!isListingEvent(type)) return { ...head, type, data: JSON.parse(row.snapshot) as ReservationView }
  if (industry === null) throw new Error(`event ${row.id}: a listing event in a stream that is not a provider's`)
  return { ...head, type, data: listingView(JSON.parse(row.snapshot) as ListingState, industry, row.created_at_ms) }
}

/** A row of the standby's feed: the owner's position, and an event unless none follows. */
type PositionedEventRow = { event_count: number } & { [K in keyof EventRow]: EventRow[K] | null }

type SeqParams = { ownerId: string; eventId: string }
type AfterParams = { ownerId: string; afterSeq: number; limit: number }

export const seqOfQuery = (on: Kysely<Tables>) =>
  new PreparedQuery<SeqParams, { seq: number }>(on, (db, param) =>
    db
      .selectFrom('events')
      .select('seq')
      .where('id', '=', param('eventId'))
      .where('owner_id', '=', ownerKey(db, param('ownerId'))),
  )

/**
 * The standby's events after a seq, with the owner's position read in the same statement: the owner's row comes
 * back even when no event follows, so "not replayed yet" is told apart from "nothing new".
 */
const positionedAfterQuery = (on: Kysely<Tables>, kind: Owner['kind']) =>
  new PreparedQuery<AfterParams, PositionedEventRow>(on, (db, param) =>
    db
      // Both owner tables have the id and event_count read here.
      .selectFrom(`${ownerTable[kind] as 'providers'} as o`)
      .leftJoin('events as e', (join) => join.onRef('e.owner_id', '=', 'o.id').on('e.seq', '>', param('afterSeq')))
      .select(['o.event_count', 'e.id', 'e.seq', 'e.type', 'e.created_at_ms', 'e.snapshot'])
      .where('o.id', '=', param('ownerId'))
      .orderBy('e.seq')
      .limit(param('limit')),
  )

interface StandbyFeed {
  reads: ReadYourWrites
  seqOf: PreparedQuery<SeqParams, { seq: number }>
  after: Record<Owner['kind'], PreparedQuery<AfterParams, PositionedEventRow>>
}

/**
 * An owner's events after a given one. seq is dense and in commit order per owner (recordEvents), so "seq greater
 * than the last one seen" never skips an event, whatever order concurrent writers took their turns in.
 */
export class EventFeed {
  readonly #seqOf: PreparedQuery<SeqParams, { seq: number }>
  readonly #after: PreparedQuery<AfterParams, EventRow>
  /** DATABASE_READ_URL: read from the standby once it has replayed the owner's writes. */
  readonly #standby?: StandbyFeed

  constructor(database: Database, reads?: ReadYourWrites) {
    this.#seqOf = seqOfQuery(database.kysely)
    this.#after = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('events')
        .select(['id', 'seq', 'type', 'created_at_ms', 'snapshot'])
        .where('owner_id', '=', param('ownerId'))
        .where('seq', '>', param('afterSeq'))
        .orderBy('seq')
        .limit(param('limit')),
    )
    if (reads) {
      const after = { provider: positionedAfterQuery(reads.replica, 'provider'), marketplace: positionedAfterQuery(reads.replica, 'marketplace') }
      this.#standby = { reads, seqOf: seqOfQuery(reads.replica), after }
    }
  }

  /** The events after `after` (from the first kept when absent), or undefined when `after` is not one of the owner's. */
  async page(owner: Owner, after: string | undefined, limit: number): Promise<EventRow[] | undefined> {
    const ownerId = owner.id
    const onPrimary = async () => {
      const afterSeq = after === undefined ? 0 : (await this.#seqOf.execute({ ownerId, eventId: after }))[0]?.seq
      return afterSeq === undefined ? undefined : this.#after.execute({ ownerId, afterSeq, limit })
    }
    const standby = this.#standby
    if (!standby) return onPrimary()
    return standby.reads.read(owner, () => this.#onStandby(standby, owner, after, limit), onPrimary)
  }

  /**
   * A cursor the standby does not know may be one it has not replayed yet: the primary decides (never a 400 for a
   * cursor the client was given). The second statement's position covers the first: the standby only moves forward.
   */
  async #onStandby(standby: StandbyFeed, owner: Owner, after: string | undefined, limit: number): Promise<PositionedRead<EventRow[]> | undefined> {
    let afterSeq = 0
    if (after !== undefined) {
      const [found] = await standby.seqOf.execute({ ownerId: owner.id, eventId: after })
      if (!found) return undefined
      afterSeq = found.seq
    }
    const rows = await standby.after[owner.kind].execute({ ownerId: owner.id, afterSeq, limit })
    return { position: rows[0]?.event_count, value: rows.filter((row): row is PositionedEventRow & EventRow => row.id !== null) }
  }
}
