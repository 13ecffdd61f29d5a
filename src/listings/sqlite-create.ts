import { execute, queryOne, type Script, type ScriptSql } from '../db/script.js'
import { recordEvents } from '../events/record.js'
import { listingId } from '../ids.js'
import { ITEM_COLUMN_TYPES, LISTING_COLUMN_NAMES, type ListingRecord } from './columns.js'
import { newListingState } from './listing-state.js'
import type { ListingWrite, StoredListing } from './writer.js'

interface Counter {
  listing_count: number
  last_created_ms: number
  last_created_tick: number
}

const itemNames = Object.keys(ITEM_COLUMN_TYPES) as Array<keyof typeof ITEM_COLUMN_TYPES>
const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ')

// SQLite's scalar max(): this script runs on SQLite only (PostgreSQL stores creates with postgres-writer.ts).
const BUMP_COUNTER = `
  update providers set
    listing_count = listing_count + 1,
    last_created_tick = case when last_created_ms >= ? then last_created_tick + 1 else 0 end,
    last_created_ms = max(last_created_ms, ?)
  where id = ?
  returning listing_count, last_created_ms, last_created_tick`
const LISTING_HEAD = ['id', 'seq', 'created_at_ms', 'updated_at_ms', 'expires_at_unix', 'request_hash', 'items_record', 'cell']
const INSERT_LISTING = `insert into listings (${[...LISTING_HEAD, ...LISTING_COLUMN_NAMES].join(', ')})
  values (${placeholders(LISTING_HEAD.length + LISTING_COLUMN_NAMES.length)})`
const INSERT_ITEM = `insert into listing_items (listing_id, ${itemNames.join(', ')}) values (${placeholders(itemNames.length + 1)})`

/**
 * A create on SQLite, as postgres-writer.ts stores one on PostgreSQL (see ListingWriter): the provider's counter
 * gives the sequence number and creation time, then the listing, its items and its `listing.created` event.
 * The SQLite writer thread runs it inside a savepoint of its group commit.
 */
export function* createListingOnSqlite(d: ScriptSql, write: ListingWrite): Script<StoredListing> {
  const { items, ...columns } = JSON.parse(write.record) as ListingRecord
  const counter = yield* queryOne<Counter>(BUMP_COUNTER, [write.nowMs, write.nowMs, write.providerId])
  if (!counter) throw new Error(`provider ${write.providerId} does not exist`)
  const createdAtMs = counter.last_created_ms
  const id = listingId(createdAtMs, counter.last_created_tick)
  const expiresAtUnix = Math.floor(createdAtMs / 1000) + write.ttlSeconds
  yield* execute(INSERT_LISTING, [
    id,
    counter.listing_count,
    createdAtMs,
    createdAtMs,
    expiresAtUnix,
    write.requestHash,
    JSON.stringify(items),
    write.cell,
    ...LISTING_COLUMN_NAMES.map((name) => columns[name]),
  ])
  for (const item of items) yield* execute(INSERT_ITEM, [id, ...itemNames.map((name) => item[name])])
  const listing = newListingState({ ...columns, items }, { id, createdAtMs, expiresAtUnix })
  yield* recordEvents(d, write.providerId, createdAtMs, [{ type: 'listing.created', listing }])
  return { listingId: id, expiresAtUnix }
}
