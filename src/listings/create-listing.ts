import type { Clock } from '../clock.js'
import type { Tx } from '../db/connection.js'
import { oneStatementOnPostgres, type Transact } from '../db/write-transaction.js'
import { isUniqueViolation, onPostgres } from '../db/dialect.js'
import { perDialect, PreparedQuery } from '../db/prepared-query.js'
import { sql } from 'kysely'
import { referenceConflict } from '../errors.js'
import { eventRows, insertEvents, listingEvent } from '../events/record.js'
import { listingId, listingIdRandomPart, listingIdSql, prefixedId } from '../ids.js'
import { listingImages, type ImageCheck } from '../images/check.js'
import type { Provider } from '../providers/repository.js'
import { aloneOnFailure, TrailingBatches } from '../trailing-batches.js'
import { prepareListing, type ListingColumns, type PreparedListing } from './columns.js'
import { newListingState } from './listing-state.js'
import type { ListingRepository, StoredListingRef } from './repository.js'
import { sameRequest } from './request-hash.js'
import { eventBit } from '../webhooks/event-mask.js'
import type { CreateListingInput, CreateListingResult, ListingTypes } from './schemas.js'

/** One create as stored: its prepared rows, and the clock reading and lifetime to date them by. */
export interface ListingCreate extends PreparedListing {
  nowMs: number
  ttlSeconds: number
}

export interface StoredListing {
  listingId: string
  expiresAtUnix: number
}

/**
 * Stores creates of one provider: a write transaction (database.transact). Bumping the provider's counter row gives
 * the dense `seq` pages are read by (recordCount exact without COUNT(*)) and a creation time that never goes backwards
 * within a provider, and serialises one provider's creates, so a concurrent duplicate referenceId waits and then fails
 * on the unique constraint instead of racing. A batch shares one creation millisecond, the latest clock reading among
 * them, and takes consecutive ticks within it.
 *
 * Other creates of the provider wait for that row, so it is locked for as short a time as each database allows: on
 * SQLite the writer thread runs the transaction whole; on PostgreSQL it is one statement (createsTogether), whose ids,
 * sequences and event snapshots are made in SQL from the counter it bumps, committed on its own (oneStatementOnPostgres).
 */
export const insertListings = oneStatementOnPostgres(async function insertListings(
  tx: Tx,
  providerId: string,
  creates: readonly ListingCreate[],
): Promise<StoredListing[]> {
  const n = creates.length
  const nowMs = Math.max(...creates.map((create) => create.nowMs))
  if (onPostgres(tx)) {
    const rows = await (createdTogether ??= createsTogether(tx)).executeIn(tx, { providerId, n, nowMs, creates: createsJson(creates, nowMs) })
    if (rows.length !== n) throw new Error(`provider ${providerId} does not exist`)
    return rows.map((row) => ({ listingId: row.id, expiresAtUnix: row.expires_at_unix }))
  }
  const [counter] = await sqliteCounter(tx).executeIn(tx, { providerId, n, nowMs, lastTickIfNew: n - 1 })
  if (!counter) throw new Error(`provider ${providerId} does not exist`)
  const createdAtMs = counter.last_created_ms
  const firstTick = counter.last_created_tick - n + 1
  const firstSeq = counter.listing_count - n + 1
  const states = creates.map(({ columns, items, ttlSeconds }, i) =>
    newListingState(
      { ...columns, items },
      { id: listingId(createdAtMs, firstTick + i), createdAtMs, expiresAtUnix: Math.floor(createdAtMs / 1000) + ttlSeconds },
    ),
  )
  await tx
    .insertInto('listings')
    .values(
      creates.map(({ columns, items, requestHash, cell }, i) => {
        const state = states[i] as (typeof states)[number]
        return {
          ...columns,
          id: state.id,
          seq: firstSeq + i,
          created_at_ms: createdAtMs,
          updated_at_ms: createdAtMs,
          expires_at_unix: state.expires_at_unix,
          request_hash: requestHash,
          items_record: JSON.stringify(items),
          cell,
        }
      }),
    )
    .execute()
  const events = eventRows(
    createdAtMs,
    states.map((listing) => listingEvent('listing.created', listing)),
  )
  await insertEvents(tx, providerId, counter.event_count - n + 1, createdAtMs, events)
  return states.map((state) => ({ listingId: state.id, expiresAtUnix: state.expires_at_unix }))
})

interface CounterParams extends Record<string, unknown> {
  providerId: string
  n: number
  nowMs: number
  /** The last tick when the batch opens a new millisecond: n − 1. */
  lastTickIfNew: number
}

/** SQLite's bump of the provider's counters for `n` creates at `nowMs` (compiled once: the writer thread runs every write). */
const sqliteCounter = perDialect<CounterParams, { listing_count: number; event_count: number; last_created_ms: number; last_created_tick: number }>(
  (db, param) =>
    db
      .updateTable('providers')
      .set((eb) => ({
        listing_count: eb('listing_count', '+', param('n')),
        event_count: eb('event_count', '+', param('n')),
        // Every right-hand side reads the row as it was.
        last_created_tick: eb
          .case()
          .when('last_created_ms', '>=', param('nowMs'))
          .then(eb('last_created_tick', '+', param('n')))
          .else(param('lastTickIfNew'))
          .end(),
        last_created_ms: eb.case().when('last_created_ms', '>=', param('nowMs')).then(eb.ref('last_created_ms')).else(param('nowMs')).end(),
      }))
      .where('id', '=', param('providerId'))
      .returning(['listing_count', 'event_count', 'last_created_ms', 'last_created_tick']),
)

/** A create as createsTogether reads it: the row's columns from the request, and what the statement needs besides. */
interface CreateRecord extends ListingColumns {
  ordinal: number
  ttl_seconds: number
  random: string
  request_hash: string
  cell: number
  items_record: string
  event_id: string
  /** The listing.created snapshot but its id, times and items: `{…}`, completed in SQL. */
  snapshot_rest: string
}

function createsJson(creates: readonly ListingCreate[], nowMs: number): string {
  return JSON.stringify(
    creates.map(({ columns, items, requestHash, cell, ttlSeconds }, i): CreateRecord => ({
      ...columns,
      ordinal: i + 1,
      ttl_seconds: ttlSeconds,
      random: listingIdRandomPart(),
      request_hash: requestHash,
      cell,
      items_record: JSON.stringify(items),
      event_id: prefixedId('evt', nowMs),
      snapshot_rest: JSON.stringify({ ...columns, version: 1, withdrawn_at_ms: null, expiry_recorded: 0 }),
    })),
  )
}

interface CreatesParams extends Record<string, unknown> {
  providerId: string
  n: number
  nowMs: number
  /** CreateRecord[] as JSON: one parameter, so the statement's text stays the same whatever the batch's size. */
  creates: string
}

let createdTogether: PreparedQuery<CreatesParams, { id: string; expires_at_unix: number }> | undefined

/** The listing row's columns that come from the request (listingColumns), as PostgreSQL types. */
const LISTING_COLUMN_TYPES: Record<keyof ListingColumns, string> = {
  provider_id: 'text',
  reference_id: 'text',
  type: 'text',
  discount_rate: 'double precision',
  is_assigned_to_driver: 'integer',
  latitude: 'double precision',
  longitude: 'double precision',
  brand_name_ar: 'text',
  brand_name_en: 'text',
  brand_url_safe_name: 'text',
  brand_image_url: 'text',
}
const LISTING_COLUMNS = Object.keys(LISTING_COLUMN_TYPES) as Array<keyof ListingColumns>

/** CreateRecord's fields as PostgreSQL types, for jsonb_to_recordset. */
const CREATE_RECORD_TYPES: Record<keyof CreateRecord, string> = {
  ...LISTING_COLUMN_TYPES,
  ordinal: 'bigint',
  ttl_seconds: 'bigint',
  random: 'text',
  request_hash: 'text',
  cell: 'bigint',
  items_record: 'text',
  event_id: 'text',
  snapshot_rest: 'text',
}
const CREATE_RECORD_COLUMNS = sql.raw(
  Object.entries(CREATE_RECORD_TYPES)
    .map(([name, type]) => `${name} ${type}`)
    .join(', '),
)

/**
 * insertListings on PostgreSQL, one statement (data-modifying WITH): bump the counter, then insert every listing,
 * its listing.created event and the event's deliveries, with ids (listingIdSql) and snapshots made from what the
 * bump returned. The counter's lock is held for this statement and its commit alone.
 */
function createsTogether(tx: Tx) {
  const column = (name: keyof CreateRecord) => sql.ref(`batch.${name}`)
  const id = sql.raw(listingIdSql('counter.created_at_ms', 'counter.first_tick + b.ordinal - 1', 'b.random'))
  return new PreparedQuery<CreatesParams, { id: string; expires_at_unix: number }>(
    tx,
    (db, param) => sql<{ id: string; expires_at_unix: number }>`
      with counter as (
        update providers set
          listing_count = listing_count + ${param('n')},
          event_count = event_count + ${param('n')},
          last_created_tick = case when last_created_ms >= ${param('nowMs')} then last_created_tick + ${param('n')} else ${param('n')} - 1 end,
          last_created_ms = greatest(last_created_ms, ${param('nowMs')})
        where id = ${param('providerId')}
        returning listing_count - ${param('n')} as base_seq, event_count - ${param('n')} as base_event_seq, last_created_ms as created_at_ms,
          last_created_tick - ${param('n')} + 1 as first_tick
      ), batch as (
        select ${id} as id, counter.base_seq + b.ordinal as seq, counter.base_event_seq + b.ordinal as event_seq, counter.created_at_ms,
          counter.created_at_ms / 1000 + b.ttl_seconds as expires_at_unix, b.*
        from counter cross join jsonb_to_recordset(cast(${param('creates')} as jsonb)) as b(${CREATE_RECORD_COLUMNS})
      ), listing as (
        insert into listings (id, seq, created_at_ms, updated_at_ms, expires_at_unix, request_hash, items_record, cell, ${sql.join(LISTING_COLUMNS.map((name) => sql.ref(name)))})
        select id, seq, created_at_ms, created_at_ms, expires_at_unix, request_hash, items_record, cell, ${sql.join(LISTING_COLUMNS.map(column))}
        from batch
        returning id, expires_at_unix, seq
      ), event as (
        insert into events (id, owner_id, seq, type, listing_id, created_at_ms, snapshot)
        select event_id, provider_id, event_seq, 'listing.created', id, created_at_ms,
          '{"id":"' || id || '","created_at_ms":' || created_at_ms || ',"updated_at_ms":' || created_at_ms || ',"expires_at_unix":' || expires_at_unix
            || ',"items":' || items_record || ',' || substr(snapshot_rest, 2)
        from batch
      ), delivery as (
        insert into webhook_deliveries (id, endpoint_id, event_id, owner_id, event_type, attempts, next_attempt_at_ms, created_at_ms)
        select w.id || ':' || batch.event_id, w.id, batch.event_id, w.owner_id, 'listing.created', 0, batch.created_at_ms, batch.created_at_ms
        from batch join webhook_endpoints w on w.owner_id = ${param('providerId')} and w.status = 'enabled'
          and (w.event_mask & ${sql.lit(eventBit('listing.created'))}) <> 0
      )
      select id, expires_at_unix from listing order by seq`,
  )
}

/** At most this many creates in one transaction: bounds how long one holds its provider's counter row. */
const MAX_BATCH = 64

/**
 * A provider's batches in flight at once: the second already waits where the lock lives (inside PostgreSQL, or in the
 * SQLite writer thread's queue, where it joins the next group commit) instead of a round trip behind the first.
 */
const RUNNING_PER_PROVIDER = 2

/**
 * A provider's creates are serialised on its counter row, so those that arrive while its transaction runs are stored
 * together by the next one (one lock, one commit), which starts the moment one ends. A failed batch is stored again
 * one create at a time, so one create's failure never fails another.
 */
export class ListingCreates {
  readonly #batches: TrailingBatches<ListingCreate, StoredListing>

  constructor(transact: Transact) {
    const store = (providerId: string, creates: readonly ListingCreate[]) => transact(insertListings, providerId, creates)
    this.#batches = new TrailingBatches<ListingCreate, StoredListing>(
      aloneOnFailure((creates, providerId) => store(providerId, creates)),
      { maxBatch: MAX_BATCH, maxRunning: RUNNING_PER_PROVIDER },
    )
  }

  /** Rejects with the database's own error, for isUniqueViolation. */
  store(create: ListingCreate): Promise<StoredListing> {
    return this.#batches.submit(create.providerId, create)
  }
}

export interface CreateListingDeps {
  listings: ListingRepository
  creates: ListingCreates
  checkImages: ImageCheck
  clock: Clock
  ttlSeconds: Record<(typeof ListingTypes)[number], number>
}

export interface CreateListingOutcome {
  /** 201 for a new listing, 200 for an identical replay of an earlier one. */
  status: 200 | 201
  body: CreateListingResult
}

function replay(existing: StoredListingRef, hash: string, input: CreateListingInput): CreateListingOutcome {
  if (!sameRequest(existing.requestHash, hash, input)) throw referenceConflict('listings')
  return { status: 200, body: { success: true, listingId: existing.listingId, expiresAtUnix: existing.expiresAtUnix } }
}

/** A replay is answered before any image is fetched; a request that fails stores nothing, so it reserves nothing. */
export async function createListing(
  deps: CreateListingDeps,
  provider: Provider,
  input: CreateListingInput,
  /** A signal that aborts when the client has gone before its answer: the image probes it alone waits for are given up. */
  clientGone?: () => AbortSignal,
): Promise<CreateListingOutcome> {
  const prepared = prepareListing(provider.id, input)
  const existing = await deps.listings.findByReference(provider.id, input.referenceId)
  if (existing) return replay(existing, prepared.requestHash, input)

  await deps.checkImages(listingImages(input), { provider: provider.id, clientGone })

  try {
    const stored = await deps.creates.store({
      ...prepared,
      nowMs: deps.clock(),
      ttlSeconds: deps.ttlSeconds[input.listingDetails.type],
    })
    return { status: 201, body: { success: true, ...stored } }
  } catch (error) {
    // Lost a race with a concurrent request for the same referenceId: answer as its replay (or conflict).
    if (!isUniqueViolation(error)) throw error
    const winner = await deps.listings.findByReference(provider.id, input.referenceId)
    if (!winner) throw error
    return replay(winner, prepared.requestHash, input)
  }
}
