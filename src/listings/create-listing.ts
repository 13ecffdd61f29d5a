import type { Clock } from '../clock.js'
import type { Tx } from '../db/connection.js'
import type { Transact } from '../db/write-transaction.js'
import { isUniqueViolation } from '../db/dialect.js'
import { Problem } from '../errors.js'
import { insertEvents } from '../events/record.js'
import { listingId } from '../ids.js'
import { listingImages, type ImageCheck } from '../images/check.js'
import type { Provider } from '../providers/repository.js'
import { TrailingBatches, type Settled } from '../trailing-batches.js'
import { prepareListing, type PreparedListing } from './columns.js'
import { newListingState } from './listing-state.js'
import type { ListingRepository, StoredListingRef } from './repository.js'
import { sameRequest } from './request-hash.js'
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
 * Stores creates of one provider in the caller's transaction. Bumping the provider's counter row in it gives the dense
 * `seq` pages are read by (recordCount exact without COUNT(*)) and a creation time that never goes backwards within a
 * provider, and serialises one provider's creates, so a concurrent duplicate referenceId waits and then fails on the
 * unique constraint instead of racing. A batch shares one creation millisecond, the latest clock reading among them,
 * and takes consecutive ticks within it.
 */
export async function insertListings(tx: Tx, providerId: string, creates: readonly ListingCreate[]): Promise<StoredListing[]> {
  const n = creates.length
  const nowMs = Math.max(...creates.map((create) => create.nowMs))
  const counter = await tx
    .updateTable('providers')
    .set((eb) => ({
      listing_count: eb('listing_count', '+', n),
      event_count: eb('event_count', '+', n),
      // Every right-hand side reads the row as it was.
      last_created_tick: eb
        .case()
        .when('last_created_ms', '>=', nowMs)
        .then(eb('last_created_tick', '+', n))
        .else(n - 1)
        .end(),
      last_created_ms: eb.case().when('last_created_ms', '>=', nowMs).then(eb.ref('last_created_ms')).else(nowMs).end(),
    }))
    .where('id', '=', providerId)
    .returning(['listing_count', 'event_count', 'last_created_ms', 'last_created_tick'])
    .executeTakeFirst()
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
  await insertEvents(
    tx,
    providerId,
    counter.event_count - n + 1,
    createdAtMs,
    states.map((listing) => ({ type: 'listing.created', listing })),
  )
  return states.map((state) => ({ listingId: state.id, expiresAtUnix: state.expires_at_unix }))
}

/** At most this many creates in one transaction: bounds how long one holds its provider's counter row. */
const MAX_BATCH = 64

/**
 * A provider's creates are serialised on its counter row, so those that arrive while its transaction runs are stored
 * together by the next one (one lock, one commit), which starts the moment one ends, two at a time on PostgreSQL so
 * the second already waits inside the database. A failed batch is stored again one create at a time, so one create's
 * failure never fails another.
 */
export class ListingCreates {
  readonly #batches: TrailingBatches<ListingCreate, StoredListing>

  constructor(transact: Transact, { concurrent }: { concurrent: number }) {
    const store = (providerId: string, creates: readonly ListingCreate[]) => transact(insertListings, providerId, creates)
    this.#batches = new TrailingBatches<ListingCreate, StoredListing>(
      async (creates, providerId) => {
        try {
          return (await store(providerId, creates)).map((value) => ({ ok: true, value }))
        } catch (error) {
          if (creates.length === 1) throw error
          const outcomes: Array<Settled<StoredListing>> = []
          for (const create of creates) {
            try {
              outcomes.push({ ok: true, value: ((await store(providerId, [create])) as [StoredListing])[0] })
            } catch (alone) {
              outcomes.push({ ok: false, error: alone })
            }
          }
          return outcomes
        }
      },
      { maxBatch: MAX_BATCH, maxRunning: concurrent },
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
  if (!sameRequest(existing.requestHash, hash, input)) {
    throw new Problem('conflict', 'referenceId is already used by one of your listings with a different body', {
      errors: [{ pointer: '/referenceId', detail: 'is already used with a different body' }],
    })
  }
  return { status: 200, body: { success: true, listingId: existing.listingId, expiresAtUnix: existing.expiresAtUnix } }
}

/** A replay is answered before any image is fetched; a request that fails stores nothing, so it reserves nothing. */
export async function createListing(
  deps: CreateListingDeps,
  provider: Provider,
  input: CreateListingInput,
  /** Aborts when the client has gone before its answer: the image probes it alone waits for are given up. */
  clientGone?: AbortSignal,
): Promise<CreateListingOutcome> {
  const prepared = prepareListing(provider.id, input)
  const existing = await deps.listings.findByReference(provider.id, input.referenceId)
  if (existing) return replay(existing, prepared.requestHash, input)

  await deps.checkImages(listingImages(input), { provider: provider.id, signal: clientGone })

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
