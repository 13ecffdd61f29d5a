import { sql } from 'kysely'
import type { Tx } from '../db/connection.js'
import { onPostgres } from '../db/dialect.js'
import { PreparedQuery } from '../db/prepared-query.js'
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

/** An event's row but its seq, which the provider's counter gives under its lock. */
export interface EventRow {
  id: string
  type: EventType
  listing_id: string
  /** The listing right after the change: a ListingState as JSON. */
  snapshot: string
}

export const eventRows = (nowMs: number, events: readonly NewEvent[]): EventRow[] =>
  events.map(({ type, listing }) => ({ id: prefixedId('evt', nowMs), type, listing_id: listing.id, snapshot: JSON.stringify(listing) }))

/**
 * Writes one provider's events of one transaction, seq from the provider's event_count bumped here. The row stays
 * locked until commit (on SQLite the whole database is), so seq order is commit order: a feed reader that has seen
 * seq N has seen every event up to N. It must be the transaction's last statement: on PostgreSQL, where other
 * writers of the provider wait for that lock, it is one statement, so the lock is held for one round trip (this
 * statement's answer, then COMMIT).
 *
 * Listings are locked first and the provider last (creates lock only the provider), so no deadlock.
 */
export async function recordEvents(tx: Tx, providerId: string, nowMs: number, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return
  const rows = eventRows(nowMs, events)
  if (onPostgres(tx)) {
    await (recordedTogether ??= recordTogether(tx)).executeIn(tx, { providerId, n: rows.length, nowMs, rows: deliveryRowsJson(rows) })
    return
  }
  const counter = await tx
    .updateTable('providers')
    .set((eb) => ({ event_count: eb('event_count', '+', rows.length) }))
    .where('id', '=', providerId)
    .returning('event_count')
    .executeTakeFirst()
  if (!counter) throw new Error(`provider ${providerId} does not exist`)
  await insertEvents(tx, providerId, counter.event_count - rows.length + 1, nowMs, rows)
}

/**
 * The events' rows, seq from `firstSeq` on (the caller has bumped event_count), and the webhook deliveries each owes,
 * due at once: one per endpoint enabled and subscribed when it commits, written with the event so none is lost.
 */
export async function insertEvents(tx: Tx, providerId: string, firstSeq: number, nowMs: number, rows: readonly EventRow[]): Promise<void> {
  await tx
    .insertInto('events')
    .values(rows.map((row, i) => ({ ...row, provider_id: providerId, seq: firstSeq + i, created_at_ms: nowMs })))
    .execute()
  for (const type of new Set(rows.map((row) => row.type))) {
    const ids = rows.filter((row) => row.type === type).map((row) => row.id)
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
          .where('e.id', 'in', ids),
      )
      .execute()
  }
}

/** The rows as one JSON parameter (the statement's text stays the same whatever their number), with each type's bit. */
const deliveryRowsJson = (rows: readonly EventRow[]) => JSON.stringify(rows.map((row, i) => ({ ...row, ordinal: i + 1, bit: eventBit(row.type) })))

interface TogetherParams extends Record<string, unknown> {
  providerId: string
  n: number
  nowMs: number
  rows: string
}

let recordedTogether: PreparedQuery<TogetherParams, never> | undefined

/** recordEvents on PostgreSQL, one statement: the counter, the events and their deliveries (data-modifying WITH). */
function recordTogether(tx: Tx): PreparedQuery<TogetherParams, never> {
  return new PreparedQuery<TogetherParams, never>(tx, (db, param) =>
    db
      .with('counter', (qc) =>
        qc
          .updateTable('providers')
          .set((eb) => ({ event_count: eb('event_count', '+', param('n')) }))
          .where('id', '=', param('providerId'))
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
          .columns(['id', 'provider_id', 'seq', 'type', 'listing_id', 'created_at_ms', 'snapshot'])
          .expression((eb) =>
            eb
              .selectFrom(['counter', 'batch'])
              .select((s) => [
                'batch.id',
                s.val(param('providerId')).as('provider_id'),
                s('counter.base', '+', s.ref('batch.ordinal')).as('seq'),
                'batch.type',
                'batch.listing_id',
                s.cast<number>(s.val(param('nowMs')), 'bigint').as('created_at_ms'),
                'batch.snapshot',
              ]),
          ),
      )
      .insertInto('webhook_deliveries')
      .columns(['id', 'endpoint_id', 'event_id', 'provider_id', 'event_type', 'attempts', 'next_attempt_at_ms', 'created_at_ms'])
      .expression((eb) =>
        eb
          .selectFrom('batch')
          .innerJoin('webhook_endpoints as w', (join) =>
            join
              .on('w.provider_id', '=', param('providerId'))
              .on('w.status', '=', sql.lit('enabled'))
              .on((on) => on(on('w.event_mask', '&', on.ref('batch.bit')), '<>', sql.lit(0))),
          )
          .select((s) => [
            sql<string>`w.id || ':' || batch.id`.as('id'),
            'w.id as endpoint_id',
            'batch.id as event_id',
            'w.provider_id',
            'batch.type as event_type',
            sql.lit(0).as('attempts'),
            s.cast<number>(s.val(param('nowMs')), 'bigint').as('next_attempt_at_ms'),
            s.cast<number>(s.val(param('nowMs')), 'bigint').as('created_at_ms'),
          ]),
      ),
  )
}
