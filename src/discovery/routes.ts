import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import { invalidRequest } from '../errors.js'
import { jsonResponse } from '../http/openapi.js'
import { listingView } from '../listings/listing-view.js'
import { defaultsFilled } from '../http/validation.js'
import { discoverQuery, type CursorCodec, type CursorKey } from './cursor.js'
import type { DiscoveryRepository } from './repository.js'
import { DiscoverPage, DiscoverQuery, exampleDiscoverPage, type DiscoverParams } from './schemas.js'
import type { Representations } from '../listings/representations.js'
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
      let after: CursorKey | undefined
      if (params.cursor !== undefined) {
        const decoded = cursors.decode(discoverQuery(params), params.cursor)
        if (typeof decoded === 'string') throw invalidRequest([{ parameter: 'cursor', detail: decoded }])
        after = decoded
      }
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
      const listings = new Map<string, Buffer>()
      const current = await discovery.current(page, params.minDiscountRate)
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
      const last = page.at(-1)
      const nextCursor =
        hits.length > params.limit && last
          ? cursors.encode(discoverQuery(params), { key: params.sort === 'distance' ? last.distance : last.expiresAtUnix, id: last.id })
          : null
      // The bytes the schema's serializer would write (test/conformance.ts checks every page against it).
      return reply.type('application/json; charset=utf-8').send(discoverPageBytes(page, listings, nextCursor) as never)
    },
  )
}

const PAGE_START = Buffer.from('{"data":[')

/** The page as the DiscoverPage schema writes it, around the listings' own bytes. */
function discoverPageBytes(page: readonly Hit[], listings: ReadonlyMap<string, Buffer>, nextCursor: string | null): Buffer {
  const parts: Buffer[] = [PAGE_START]
  for (const hit of page) {
    const listing = listings.get(hit.id)
    if (listing === undefined) continue
    parts.push(Buffer.from(`${parts.length === 1 ? '' : ','}{"distanceMeters":${Math.round(hit.distance)},"listing":`, 'latin1'), listing, ENTRY_END)
  }
  parts.push(Buffer.from(`],"nextCursor":${JSON.stringify(nextCursor)}}`))
  return Buffer.concat(parts)
}

const ENTRY_END = Buffer.from('}')
