import type { Clock } from '../clock.js'
import { isUniqueViolation } from '../db/dialect.js'
import { Problem } from '../errors.js'
import { listingImages, type ImageCheck } from '../images/check.js'
import type { Provider } from '../providers/repository.js'
import type { ListingRepository, StoredListingRef } from './repository.js'
import { prepareListing } from './columns.js'
import { sameRequest } from './request-hash.js'
import type { CreateListingInput, CreateListingResult, ListingTypes } from './schemas.js'

export interface CreateListingDeps {
  listings: ListingRepository
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

/**
 * docs/api.md#requests-and-responses after validation: referenceId check → image checks → store. A replay is answered before any
 * image is fetched; a request that fails stores nothing, so it reserves nothing.
 */
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
    const stored = await deps.listings.insert({
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
