import type SQLite from 'better-sqlite3'
import { listingId } from '../ids.js'
import { ITEM_COLUMN_TYPES, LISTING_COLUMN_NAMES, type ListingRecord } from './columns.js'
import type { ListingWrite } from './writer.js'

export type WriteOutcome =
  | { ok: true; listingId: string; expiresAtUnix: number }
  | { ok: false; error: { message: string; code?: string } }

interface Counter {
  listing_count: number
  last_created_ms: number
  last_created_tick: number
}

const itemNames = Object.keys(ITEM_COLUMN_TYPES)

/**
 * Writes creates to SQLite as postgres-writer.ts does to PostgreSQL (see ListingWriter).
 *
 * Group commit: a batch of creates is one transaction, each create inside its own savepoint, so one that fails
 * (a referenceId taken a moment ago) is undone alone while the others commit. The commit, with its fsync and
 * any WAL checkpoint, is paid once per batch instead of once per create. Nobody is answered before the commit.
 */
export function sqliteListingWriter(db: SQLite.Database): (batch: readonly ListingWrite[]) => WriteOutcome[] {
  const bumpCounter = db.prepare<[{ provider_id: string; now_ms: number }], Counter>(`
    update providers set
      listing_count = listing_count + 1,
      last_created_tick = case when last_created_ms >= @now_ms then last_created_tick + 1 else 0 end,
      last_created_ms = max(last_created_ms, @now_ms)
    where id = @provider_id
    returning listing_count, last_created_ms, last_created_tick`)
  const insertListing = db.prepare(`
    insert into listings (id, seq, created_at_ms, expires_at_unix, request_hash, ${LISTING_COLUMN_NAMES.join(', ')})
    values (@id, @seq, @created_at_ms, @expires_at_unix, @request_hash, ${LISTING_COLUMN_NAMES.map((name) => `@${name}`).join(', ')})`)
  const insertItem = db.prepare(`
    insert into listing_items (listing_id, ${itemNames.join(', ')})
    values (@listing_id, ${itemNames.map((name) => `@${name}`).join(', ')})`)
  const begin = db.prepare('begin immediate')
  const commit = db.prepare('commit')
  const rollback = db.prepare('rollback')
  const savepoint = db.prepare('savepoint one_create')
  const release = db.prepare('release one_create')
  const undo = db.prepare('rollback to one_create')

  const writeOne = ({ providerId, record, requestHash, nowMs, ttlSeconds }: ListingWrite): WriteOutcome => {
    const { items, ...columns } = JSON.parse(record) as ListingRecord
    const counter = bumpCounter.get({ provider_id: providerId, now_ms: nowMs })
    if (!counter) throw new Error(`provider ${providerId} does not exist`)
    const createdAtMs = counter.last_created_ms
    const id = listingId(createdAtMs, counter.last_created_tick)
    const expiresAtUnix = Math.floor(createdAtMs / 1000) + ttlSeconds
    insertListing.run({
      ...columns,
      request_hash: requestHash,
      id,
      seq: counter.listing_count,
      created_at_ms: createdAtMs,
      expires_at_unix: expiresAtUnix,
    })
    for (const item of items) insertItem.run({ listing_id: id, ...item })
    return { ok: true, listingId: id, expiresAtUnix }
  }

  return (batch) => {
    try {
      begin.run()
      const outcomes = batch.map((write): WriteOutcome => {
        savepoint.run()
        try {
          const outcome = writeOne(write)
          release.run()
          return outcome
        } catch (error) {
          // Some errors (SQLITE_FULL, SQLITE_IOERR) end the whole transaction: then the batch fails below.
          if (!db.inTransaction) throw error
          undo.run()
          release.run()
          return failed(error)
        }
      })
      commit.run()
      return outcomes
    } catch (error) {
      if (db.inTransaction) rollback.run()
      return batch.map(() => failed(error))
    }
  }
}

/** An error as it crosses to the main thread: its message and SQLite's code (what dialect.ts classifies). */
function failed(error: unknown): WriteOutcome {
  const { message, code } = error as { message?: unknown; code?: unknown }
  return { ok: false, error: { message: String(message ?? error), ...(typeof code === 'string' ? { code } : {}) } }
}
