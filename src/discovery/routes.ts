import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import { jsonResponse } from '../http/openapi.js'
import { listingView } from '../listings/listing-view.js'
import { defaultsFilled } from '../http/validation.js'
import { discoverQuery, type CursorCodec } from './cursor.js'
import type { DiscoveryRepository } from './repository.js'
import { DiscoverPage, DiscoverQuery, exampleDiscoverPage, type DiscoverParams } from './schemas.js'
import type { Representation, Representations } from '../listings/representations.js'
import { availableOf, heldIsExact, storedHeld } from '../reservations/stock.js'
import type { Hit } from './search.js'

export interface DiscoveryRoutesOptions {
  discovery: DiscoveryRepository
  representations: Representations
  cursors: CursorCodec
  clock: Clock
}

export const discoveryRoutes: FastifyPluginAsyncTypebox<DiscoveryRoutesOptions> = async (app, { discovery, representations, cursors, clock }) => {
  app.get(
    '/discover',
    {
      config: { principal: 'marketplace' },
      schema: {
        operationId: 'discoverListings',
        tags: ['discovery'],
        summary: 'Active listings of every provider near a point (marketplace tokens only)',
        description:
          'Listings `active` now (not withdrawn, not expired, not sold out) within `radiusKm` of the point by great-circle distance, discounted at least ' +
          '`minDiscountRate`, nearest first or ending soonest. Follow `nextCursor` for more: each listing comes at most once while nothing changes. A ' +
          'provider’s token is `403`; this route is for marketplace tokens (`listing-service marketplace create`).',
        querystring: defaultsFilled<DiscoverParams>(DiscoverQuery),
        response: {
          200: jsonResponse('A page of listings.', DiscoverPage, {
            page: exampleDiscoverPage,
            nothingNear: { data: [], nextCursor: null },
          }),
        },
        'x-problems': ['invalid-request', 'internal', 'unavailable'],
      },
    },
    async (request, reply) => {
      const params = request.query
      const after = cursors.after(discoverQuery(params), params.cursor)
      const nowMs = clock()
      const hits = await discovery.search({
        latitude: params.latitude,
        longitude: params.longitude,
        radiusMeters: params.radiusKm * 1000,
        sort: params.sort,
        minDiscountRate: params.minDiscountRate,
        limit: params.limit,
        after,
        nowMs,
      })
      const page = hits.slice(0, params.limit)
      // A listing kept at the version the candidate query read is that very listing; the others are read whole.
      const listings = new Map<string, Representation>()
      const current = await discovery.current(page, params.minDiscountRate, nowMs)
      for (const hit of current) {
        const kept = representations.get(hit.id, hit.version)
        if (kept) listings.set(hit.id, kept)
      }
      for (const { state, industry, soldOut } of await discovery.states(current.filter((hit) => !listings.has(hit.id)))) {
        // Changed since the candidate query: no longer discoverable.
        if (soldOut || state.withdrawn_at_ms !== null || state.discount_rate < params.minDiscountRate) continue
        const view = listingView(state, industry, nowMs)
        if (view.status !== 'active') continue
        listings.set(
          state.id,
          representations.of(state.id, view.version, () => ({ ...view, providerId: state.provider_id })),
        )
      }
      const available = await availableNow(discovery, current, listings, nowMs)
      const last = page.at(-1)
      const nextCursor =
        hits.length > params.limit && last
          ? cursors.encode(discoverQuery(params), { key: params.sort === 'distance' ? last.distance : last.expiresAtUnix, id: last.id })
          : null
      // The bytes the schema's serializer would write (test/conformance.ts checks every page against it).
      return reply.type('application/json; charset=utf-8').send(discoverPageBytes(current, listings, available, nextCursor) as never)
    },
  )
}

const PAGE_START = Buffer.from('{"data":[')

/**
 * Each listing's available units now: its quantities at the version sent, less its holds. The held record the
 * candidate query read is exact until its first hold runs out; past that (until a write or the sweeper takes the
 * run-out holds out) the run-out ones are subtracted here, read for those listings alone.
 */
async function availableNow(discovery: DiscoveryRepository, hits: readonly Hit[], listings: ReadonlyMap<string, Representation>, nowMs: number) {
  const stale = hits.filter((hit) => hit.heldRecord !== null && !heldIsExact(hit.holdsExpireMs, nowMs))
  const runOut = stale.length > 0 ? await discovery.runOutHolds(stale, nowMs) : new Map<string, number[]>()
  const available = new Map<string, number[]>()
  for (const hit of hits) {
    const listing = listings.get(hit.id)
    if (!listing) continue
    let held = storedHeld(hit.heldRecord, listing.quantities.length)
    const gone = runOut.get(hit.id)
    if (gone) held = held.map((units, k) => units - (gone[k] ?? 0))
    const units = availableOf(listing.quantities, held, true)
    // Every unit held: left out (the candidate query knew unless a hold ran out, or a confirm sold the rest, since).
    if (units.some((n) => n > 0)) available.set(hit.id, units)
  }
  return available
}

/** The page as the DiscoverPage schema writes it, around the listings' own bytes. */
function discoverPageBytes(
  page: readonly Hit[],
  listings: ReadonlyMap<string, Representation>,
  available: ReadonlyMap<string, number[]>,
  nextCursor: string | null,
): Buffer {
  const parts: Buffer[] = [PAGE_START]
  for (const hit of page) {
    const listing = listings.get(hit.id)
    const units = available.get(hit.id)
    if (listing === undefined || units === undefined) continue
    parts.push(
      Buffer.from(`${parts.length === 1 ? '' : ','}{"distanceMeters":${Math.round(hit.distance)},"available":[${units.join(',')}],"listing":`, 'latin1'),
      listing.bytes,
      ENTRY_END,
    )
  }
  parts.push(Buffer.from(`],"nextCursor":${JSON.stringify(nextCursor)}}`))
  return Buffer.concat(parts)
}

const ENTRY_END = Buffer.from('}')
