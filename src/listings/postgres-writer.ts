import { sql, type Expression, type RawBuilder } from 'kysely'
import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import { LISTING_ID_LAYOUT, listingIdRandomPart, prefixedId } from '../ids.js'
import { TrailingBatches, type Settled } from '../trailing-batches.js'
import { ITEM_COLUMN_TYPES, LISTING_COLUMN_NAMES, LISTING_COLUMN_TYPES } from './columns.js'
import { eventBit } from '../webhooks/event-mask.js'
import type { ListingWrite, ListingWriter, StoredListing } from './listing-write.js'

interface BatchParams extends Record<string, unknown> {
  provider_id: string
  n: number
  now_ms: number
  /**
   * JSON: an array of the listings' records (ListingRecord), each with its ordinal (1…n), ttl_seconds, random (the
   * id's tail), request_hash and event_id (its `listing.created` event's id).
   */
  listings: string
}

/**
 * A listing's record with the fields only this statement needs put in front: text joined to text, so the
 * record (a 100-item create's is ~36 kB) is neither parsed nor serialised again on its way to PostgreSQL.
 */
function batchElement({ record, requestHash, ttlSeconds, nowMs, cell }: ListingWrite, ordinal: number): string {
  const head =
    `{"ordinal":${ordinal},"ttl_seconds":${ttlSeconds},"cell":${cell},"random":${JSON.stringify(listingIdRandomPart())},` +
    `"request_hash":${JSON.stringify(requestHash)},"event_id":${JSON.stringify(prefixedId('evt', nowMs))},`
  return head + record.slice(1) // a record is a JSON object with fields: "{…}"
}

/**
 * listingId as a PostgreSQL expression over the columns holding the millisecond and the tick, so a create can
 * be one statement. Each digit is `substr(alphabet, ((n >> 5k) & 31) + 1, 1)`. Not in ids.ts: that module is
 * also loaded by the SQLite writer thread, which has no use for Kysely (~160 ms to load).
 */
export function listingIdSql(createdAtMs: Expression<unknown>, tick: Expression<unknown>, random: Expression<unknown>): RawBuilder<string> {
  const { alphabet, timeDigits, tickDigits } = LISTING_ID_LAYOUT
  const digits = (value: Expression<unknown>, count: number) =>
    Array.from({ length: count }, (_, i) => sql`substr(${sql.lit(alphabet)}, ((${value} >> ${sql.lit(5 * (count - 1 - i))}) & 31)::int + 1, 1)`)
  return sql<string>`(${sql.join([...digits(createdAtMs, timeDigits), ...digits(tick, tickDigits), sql`${random}::text`], sql` || `)})`
}

/** At most this many creates in one statement: bounds the statement's size and the time its lock is held. */
const MAX_BATCH = 64

const record = (types: Record<string, string>) => sql.raw(Object.entries(types).map(([name, type]) => `${name} ${type}`).join(', '))
const names = (list: readonly string[], prefix = '') => sql.raw(list.map((name) => `${prefix}${name}`).join(', '))

/**
 * PostgreSQL: the creates of one provider that arrive together are stored by one statement (TrailingBatches:
 * while statements run, the next creates gather). It bumps the provider's counters by their number and inserts
 * every listing, item and `listing.created` event from one jsonb parameter, with data-modifying CTEs: the counter row's lock is taken
 * once, held for one statement, and released by one commit, instead of once per create with the creates queued
 * behind it. Ids are built in SQL (listingIdSql) from the counter's millisecond and consecutive ticks.
 *
 * A batch that fails for any reason (a referenceId already taken, or twice in the batch; a value one create
 * carries that PostgreSQL refuses) is stored again one create at a time, so each gets its own answer: one
 * create's failure never fails another's.
 */
export function postgresListingWriter(database: Database): ListingWriter {
  const insertBatch = new PreparedQuery<BatchParams, { id: string; expires_at_unix: number }>(
    database.kysely,
    (_db, param) => sql`
      with counter as (
        update providers set
          listing_count = listing_count + ${param('n')},
          event_count = event_count + ${param('n')},
          last_created_tick = case when last_created_ms >= ${param('now_ms')} then last_created_tick + ${param('n')} else ${param('n')} - 1 end,
          last_created_ms = greatest(last_created_ms, ${param('now_ms')})
        where id = ${param('provider_id')}
        returning id as provider_id, listing_count - ${param('n')} as base_seq, event_count - ${param('n')} as base_event_seq,
          last_created_ms, last_created_tick - ${param('n')} + 1 as first_tick
      ), batch as (
        select e.elem, b.* from jsonb_array_elements(${param('listings')}::jsonb) as e(elem)
          cross join lateral jsonb_to_record(e.elem)
          as b(${record(LISTING_COLUMN_TYPES)}, ordinal bigint, ttl_seconds bigint, cell bigint, random text, request_hash text, event_id text, items jsonb)
      ), listing as (
        insert into listings (id, seq, created_at_ms, updated_at_ms, expires_at_unix, request_hash, items_record, cell, ${names(LISTING_COLUMN_NAMES)})
        select ${listingIdSql(sql.ref('last_created_ms'), sql`(first_tick + ordinal - 1)`, sql.ref('random'))},
          base_seq + ordinal, last_created_ms, last_created_ms, last_created_ms / 1000 + ttl_seconds, request_hash, items::text, cell,
          ${names(LISTING_COLUMN_NAMES, 'batch.')}
        from counter cross join batch
        returning id, seq, expires_at_unix
      ), items as (
        insert into listing_items (listing_id, ${names(Object.keys(ITEM_COLUMN_TYPES))})
        select listing.id, ${names(Object.keys(ITEM_COLUMN_TYPES), 'item.')}
        from counter
          join batch on true
          join listing on listing.seq = counter.base_seq + batch.ordinal
          cross join jsonb_to_recordset(batch.items) as item(${record(ITEM_COLUMN_TYPES)})
      ), events as (
        -- The outbox (events/record.ts does the same for every other change): each listing's listing.created
        -- event, its seq from the provider's event_count bumped above, its snapshot the ListingState as JSON.
        insert into events (id, provider_id, seq, type, listing_id, created_at_ms, snapshot)
        select batch.event_id, counter.provider_id, counter.base_event_seq + batch.ordinal, 'listing.created', listing.id,
          counter.last_created_ms,
          ((batch.elem - array['items_json', 'ordinal', 'ttl_seconds', 'cell', 'random', 'request_hash', 'event_id'])
            || jsonb_build_object('id', listing.id, 'version', 1, 'created_at_ms', counter.last_created_ms,
                 'updated_at_ms', counter.last_created_ms, 'expires_at_unix', listing.expires_at_unix,
                 'withdrawn_at_ms', null, 'expiry_recorded', 0))::text
        from counter
          join batch on true
          join listing on listing.seq = counter.base_seq + batch.ordinal
        returning id
      ), deliveries as (
        -- Each event's webhook deliveries, as events/record.ts writes them for every other change.
        insert into webhook_deliveries (id, endpoint_id, event_id, provider_id, event_type, attempts, next_attempt_at_ms, created_at_ms)
        select w.id || ':' || events.id, w.id, events.id, w.provider_id, 'listing.created', 0, counter.last_created_ms, counter.last_created_ms
        from counter
          join webhook_endpoints w on w.provider_id = counter.provider_id
            and w.status = 'enabled' and (w.event_mask & ${sql.lit(eventBit('listing.created'))}) <> 0
          cross join events
      )
      select listing.id, listing.expires_at_unix
      from listing
      order by listing.seq`,
  )

  async function store(writes: readonly ListingWrite[]): Promise<StoredListing[]> {
    const { providerId } = writes[0] as ListingWrite
    const rows = await insertBatch.execute({
      provider_id: providerId,
      n: writes.length,
      // One creation millisecond for the batch: the latest clock reading among its creates.
      now_ms: Math.max(...writes.map((write) => write.nowMs)),
      listings: `[${writes.map((write, i) => batchElement(write, i + 1)).join(',')}]`,
    })
    if (rows.length !== writes.length) throw new Error(`provider ${providerId} does not exist`)
    return rows.map((row) => ({ listingId: row.id, expiresAtUnix: Number(row.expires_at_unix) }))
  }

  // Two statements in flight per provider: the second waits on the counter row inside PostgreSQL and starts the
  // moment the first commits, instead of once our busy event loop has read the first's answer (353 → 400 and
  // 440 → 524 creates/s of 100 items at saturation, paired runs).
  const batches = new TrailingBatches<ListingWrite, StoredListing>(async (writes) => {
    try {
      return (await store(writes)).map((value) => ({ ok: true, value }))
    } catch (error) {
      if (writes.length === 1) throw error
      const outcomes: Array<Settled<StoredListing>> = []
      for (const write of writes) {
        try {
          outcomes.push({ ok: true, value: ((await store([write])) as [StoredListing])[0] })
        } catch (alone) {
          outcomes.push({ ok: false, error: alone })
        }
      }
      return outcomes
    }
  }, { maxBatch: MAX_BATCH, maxRunning: 2 })

  return {
    write: (write) => batches.submit(write.providerId, write),
  }
}
