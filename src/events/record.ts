import { sql, type QueryCreator, type UpdateQueryBuilder, type UpdateResult } from 'kysely'
import type { Tx } from '../db/connection.js'
import type { Tables } from '../db/tables.js'
import { onPostgres } from '../db/dialect.js'
import { perDialect, PreparedQuery } from '../db/prepared-query.js'
import { prefixedId } from '../ids.js'
import type { ListingState } from '../listings/listing-state.js'
import { eventBit } from '../webhooks/event-mask.js'
import { ownerTable, type Owner } from './owner.js'
import type { EventType, ListingEventType } from './types.js'

/* The outbox: every change writes its events in the change's own transaction, so neither exists without the other. */

export interface NewEvent {
  type: EventType
  /** The listing the change is of, or the reservation's listing. */
  listingId: string
  /** Right after the change: a listing event's ListingState (shown through listingView), else the event's data as it is sent. */
  snapshot: object
}

/** A listing's event: its snapshot is the listing right after the change. */
export const listingEvent = (type: ListingEventType, listing: ListingState): NewEvent => ({ type, listingId: listing.id, snapshot: listing })

/** An event's row but its seq, which the owner's counter gives under its lock. */
export interface EventRow {
  id: string
  type: EventType
  listing_id: string
  /** NewEvent's snapshot as JSON. */
  snapshot: string
}

export const eventRows = (nowMs: number, events: readonly NewEvent[]): EventRow[] =>
  events.map(({ type, listingId, snapshot }) => ({ id: prefixedId('evt', nowMs), type, listing_id: listingId, snapshot: JSON.stringify(snapshot) }))

/**
 * Writes one owner's events of one transaction, seq from the owner's event_count (its provider's or marketplace's
 * row) bumped here. The row stays locked until commit (on SQLite the whole database is), so seq order is commit
 * order: a feed reader that has seen seq N has seen every event up to N. It must be the transaction's last
 * statement: on PostgreSQL, where other writers of the owner wait for that lock, it is one statement, so the lock
 * is held for one round trip (this statement's answer, then COMMIT). A change with events for two owners records
 * the provider's, then the marketplace's.
 *
 * Listings are locked first, then the provider, then marketplaces (creates lock only the provider), so no deadlock.
 * Also a write transaction of its own (database.transact): events with no other change.
 */
export async function recordEvents(tx: Tx, owner: Owner, nowMs: number, events: readonly NewEvent[]): Promise<void> {
  await writeThenRecord(tx, null, owner, nowMs, events)
}

/**
 * A write a change makes just before its events: the row of the listing it changes. On PostgreSQL it is one more part
 * of the events' statement (writeThenRecord), so a transaction that locked that row ends one round trip sooner: the
 * row's next writer waits for this statement and COMMIT only. Defined once per shape, at module level.
 */
export class LeadingWrite<P extends Record<string, unknown>> {
  readonly #alone: (db: Tx) => PreparedQuery<P, never>
  readonly #together: Partial<Record<Owner['kind'], PreparedQuery<P & TogetherParams, { base: number }>>> = {}

  constructor(private readonly build: LeadingBuild<P>) {
    this.#alone = perDialect<P, never>((db, param) => build(db, param))
  }

  /** This write with the values of one change. */
  of(params: P): Lead {
    return {
      alone: (tx) => this.#alone(tx).executeIn(tx, params),
      together: (tx, kind, record) => (this.#together[kind] ??= recordTogether<P>(tx, kind, this.build)).executeIn(tx, { ...params, ...record }),
    }
  }
}

type LeadingBuild<P> = (
  db: QueryCreator<Tables>,
  param: <K extends keyof P & string>(name: K) => P[K],
) => UpdateQueryBuilder<Tables, 'listings', 'listings', UpdateResult>

/** A LeadingWrite with its values: run alone, or together with the events of an owner. */
export interface Lead {
  alone(tx: Tx): Promise<unknown>
  together(tx: Tx, kind: Owner['kind'], record: TogetherParams): Promise<Array<{ base: number }>>
}

/** recordEvents after `lead` (none: recordEvents itself), in one statement on PostgreSQL. */
export async function writeThenRecord(tx: Tx, lead: Lead | null, owner: Owner, nowMs: number, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) {
    await lead?.alone(tx)
    return
  }
  const rows = eventRows(nowMs, events)
  if (onPostgres(tx)) {
    const record = { ownerId: owner.id, n: rows.length, nowMs, rows: deliveryRowsJson(rows) }
    const counted = lead
      ? await lead.together(tx, owner.kind, record)
      : await (recordedTogether[owner.kind] ??= recordTogether(tx, owner.kind, null)).executeIn(tx, record)
    if (counted.length === 0) throw new Error(`${owner.kind} ${owner.id} does not exist`)
    return
  }
  await lead?.alone(tx)
  const [counter] = await sqliteCounter[owner.kind](tx).executeIn(tx, { ownerId: owner.id, n: rows.length })
  if (!counter) throw new Error(`${owner.kind} ${owner.id} does not exist`)
  await insertEvents(tx, owner.id, counter.base + 1, nowMs, rows)
}

/** SQLite's counter bump of recordEvents: the seq before the events, as PostgreSQL's returns it. */
const counterBump = (kind: Owner['kind']) =>
  perDialect<{ ownerId: string; n: number }, { base: number }>((db, param) =>
    db
      .updateTable(ownerTable[kind])
      .set((eb) => ({ event_count: eb('event_count', '+', param('n')) }))
      .where('id', '=', param('ownerId'))
      .returning((eb) => eb('event_count', '-', param('n')).as('base')),
  )
const sqliteCounter = { provider: counterBump('provider'), marketplace: counterBump('marketplace') } satisfies Record<Owner['kind'], unknown>

interface DeliveriesParams extends Record<string, unknown> {
  ownerId: string
  nowMs: number
  /** The events as JSON, [{ id, type, bit }]: what their deliveries need. */
  events: string
}

const insertedDeliveries = perDialect<DeliveriesParams, never>(
  (_db, param) => sql<never>`
    insert into webhook_deliveries (id, endpoint_id, event_id, owner_id, event_type, attempts, next_attempt_at_ms, created_at_ms)
    select w.id || ':' || (r.value ->> 'id'), w.id, r.value ->> 'id', w.owner_id, r.value ->> 'type', 0, ${param('nowMs')}, ${param('nowMs')}
    from json_each(${param('events')}) as r
      join webhook_endpoints w on w.owner_id = ${param('ownerId')} and w.status = 'enabled' and (w.event_mask & (r.value ->> 'bit')) <> 0`,
)

interface EventParams extends EventRow, Record<string, unknown> {
  owner_id: string
  seq: number
  created_at_ms: number
}

const insertedEvent = perDialect<EventParams, never>((db, param) =>
  db.insertInto('events').values({
    id: param('id'),
    owner_id: param('owner_id'),
    seq: param('seq'),
    type: param('type'),
    listing_id: param('listing_id'),
    created_at_ms: param('created_at_ms'),
    snapshot: param('snapshot'),
  }),
)

/**
 * The events' rows, seq from `firstSeq` on (the caller has bumped event_count), and the webhook deliveries each owes,
 * due at once: one per endpoint enabled and subscribed when it commits, written with the event so none is lost.
 * SQLite (PostgreSQL writes them in the statement that bumps the counter): statements of fixed text, compiled once
 * (the writer thread, which runs every write, spent much of its time building statements). Each event from bound
 * values: its snapshot inside a JSON parameter cost SQLite more to take out again than the insert itself.
 */
export async function insertEvents(tx: Tx, ownerId: string, firstSeq: number, nowMs: number, rows: readonly EventRow[]): Promise<void> {
  const insert = insertedEvent(tx)
  for (const [i, row] of rows.entries()) await insert.executeIn(tx, { ...row, owner_id: ownerId, seq: firstSeq + i, created_at_ms: nowMs })
  const events = JSON.stringify(rows.map(({ id, type }) => ({ id, type, bit: eventBit(type) })))
  await insertedDeliveries(tx).executeIn(tx, { ownerId, nowMs, events })
}

/** PostgreSQL's rows as one JSON parameter (the statement's text stays the same whatever their number), with each type's bit. */
const deliveryRowsJson = (rows: readonly EventRow[]) => JSON.stringify(rows.map((row, i) => ({ ...row, ordinal: i + 1, bit: eventBit(row.type) })))

interface TogetherParams extends Record<string, unknown> {
  ownerId: string
  n: number
  nowMs: number
  rows: string
}

/** One statement per kind of owner: they differ in the table of the counter. */
const recordedTogether: Partial<Record<Owner['kind'], PreparedQuery<TogetherParams, { base: number }>>> = {}

/**
 * recordEvents on PostgreSQL, one statement: the leading write if any, the counter, the events and their deliveries
 * (data-modifying WITH). It answers with the counter's row: none when the owner does not exist (and then nothing was
 * written).
 */
function recordTogether<P extends Record<string, unknown> = TogetherParams>(
  tx: Tx,
  kind: Owner['kind'],
  lead: LeadingBuild<P> | null,
): PreparedQuery<P & TogetherParams, { base: number }> {
  return new PreparedQuery<P & TogetherParams, { base: number }>(tx, (db, param) =>
    // Nothing refers to the lead's rows: its type is left out.
    (lead ? (db.with('lead', (qc) => lead(qc, param)) as unknown as typeof db) : db)
      .with('counter', (qc) =>
        qc
          .updateTable(ownerTable[kind])
          .set((eb) => ({ event_count: eb('event_count', '+', param('n')) }))
          .where('id', '=', param('ownerId'))
          .returning((eb) => eb('event_count', '-', param('n')).as('base')),
      )
      .with(
        'batch',
        () => sql<EventRow & { ordinal: number; bit: number }>`(
        select * from jsonb_to_recordset(cast(${param('rows')} as jsonb))
          as r(id text, type text, listing_id text, snapshot text, ordinal bigint, bit bigint))`,
      )
      .with('event', (qc) =>
        qc
          .insertInto('events')
          .columns(['id', 'owner_id', 'seq', 'type', 'listing_id', 'created_at_ms', 'snapshot'])
          .expression((eb) =>
            eb
              .selectFrom(['counter', 'batch'])
              .select((s) => [
                'batch.id',
                s.val(param('ownerId')).as('owner_id'),
                s('counter.base', '+', s.ref('batch.ordinal')).as('seq'),
                'batch.type',
                'batch.listing_id',
                s.cast<number>(s.val(param('nowMs')), 'bigint').as('created_at_ms'),
                'batch.snapshot',
              ]),
          ),
      )
      .with('delivery', (qc) =>
        qc
          .insertInto('webhook_deliveries')
          .columns(['id', 'endpoint_id', 'event_id', 'owner_id', 'event_type', 'attempts', 'next_attempt_at_ms', 'created_at_ms'])
          .expression((eb) =>
            eb
              .selectFrom('batch')
              .innerJoin('webhook_endpoints as w', (join) =>
                join
                  .on('w.owner_id', '=', param('ownerId'))
                  .on('w.status', '=', sql.lit('enabled'))
                  .on((on) => on(on('w.event_mask', '&', on.ref('batch.bit')), '<>', sql.lit(0))),
              )
              .select((s) => [
                sql<string>`w.id || ':' || batch.id`.as('id'),
                'w.id as endpoint_id',
                'batch.id as event_id',
                'w.owner_id',
                'batch.type as event_type',
                sql.lit(0).as('attempts'),
                s.cast<number>(s.val(param('nowMs')), 'bigint').as('next_attempt_at_ms'),
                s.cast<number>(s.val(param('nowMs')), 'bigint').as('created_at_ms'),
              ]),
          ),
      )
      .selectFrom('counter')
      .select('base'),
  )
}
