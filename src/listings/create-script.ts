import { execute, queryOne, type Script, type ScriptSql } from '../db/script.js'
import { recordEvents } from '../events/record.js'
import { listingId } from '../ids.js'
import { ITEM_COLUMN_TYPES, LISTING_COLUMN_NAMES, type ListingRecord } from './columns.js'
import { newListingState } from './listing-state.js'
import type { ListingWrite, StoredListing } from './listing-write.js'

interface Counter {
  listing_count: number
  last_created_ms: number
  last_created_tick: number
}

const itemNames = Object.keys(ITEM_COLUMN_TYPES) as Array<keyof typeof ITEM_COLUMN_TYPES>
const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ')

const bumpCounter = (d: ScriptSql) => `
  update providers set
    listing_count = listing_count + 1,
    last_created_tick = case when last_created_ms >= ? then last_created_tick + 1 else 0 end,
    last_created_ms = ${d.greatest}(last_created_ms, ?)
  where id = ?
  returning listing_count, last_created_ms, last_created_tick`
const LISTING_HEAD = ['id', 'seq', 'created_at_ms', 'updated_at_ms', 'expires_at_unix', 'request_hash', 'items_record', 'cell']
const INSERT_LISTING = `insert into listings (${[...LISTING_HEAD, ...LISTING_COLUMN_NAMES].join(', ')})
  values (${placeholders(LISTING_HEAD.length + LISTING_COLUMN_NAMES.length)})`
const insertItems = (d: ScriptSql) => `insert into listing_items (listing_id, ${itemNames.join(', ')})
  select cast(? as text), ${itemNames.map((name) => `i.${name}`).join(', ')} from ${d.jsonRows('i', ITEM_COLUMN_TYPES)}`

/**
 * A create (run on SQLite; PostgreSQL stores a provider's creates that arrive together in one statement,
 * postgres-writer.ts, for the same rows): the provider's counter gives the sequence number and creation time, then the
 * listing, its items (one statement, whatever their number) and its `listing.created` event. Bumping the counter
 * row in the create's transaction yields the listing's dense sequence number (recordCount stays exact without
 * COUNT(*)) and a creation time that never goes backwards within a provider, and it serialises one provider's
 * creates, so a concurrent duplicate referenceId waits and then fails on the unique constraint instead of
 * racing. Each create is a transaction of its own (on SQLite, a savepoint of the writer thread's group commit),
 * so no create shares another's fate.
 */
export function* createListing(d: ScriptSql, write: ListingWrite): Script<StoredListing> {
  const { items, ...columns } = JSON.parse(write.record) as ListingRecord
  const counter = yield* queryOne<Counter>(bumpCounter(d), [write.nowMs, write.nowMs, write.providerId])
  if (!counter) throw new Error(`provider ${write.providerId} does not exist`)
  const createdAtMs = Number(counter.last_created_ms)
  const id = listingId(createdAtMs, Number(counter.last_created_tick))
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
  yield* execute(insertItems(d), [id, JSON.stringify(items)])
  const listing = newListingState({ ...columns, items }, { id, createdAtMs, expiresAtUnix })
  yield* recordEvents(d, write.providerId, createdAtMs, [{ type: 'listing.created', listing }])
  return { listingId: id, expiresAtUnix }
}
