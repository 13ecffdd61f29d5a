import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import { invalidRequest } from '../errors.js'
import { jsonResponse } from '../http/openapi.js'
import { listingView } from '../listings/listing-view.js'
import { defaultsFilled } from '../http/validation.js'
import type { CursorCodec, CursorKey } from './cursor.js'
import type { DiscoveryRepository } from './repository.js'
import { DiscoverPage, DiscoverQuery, exampleDiscoverPage, type DiscoverParams } from './schemas.js'
import { search } from './search.js'

export interface DiscoveryRoutesOptions {
  discovery: DiscoveryRepository
  cursors: CursorCodec
  clock: Clock
}

export const discoveryRoutes: FastifyPluginAsyncTypebox<DiscoveryRoutesOptions> = async (app, { discovery, cursors, clock }) => {
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
    async (request) => {
      const params = request.query
      let after: CursorKey | undefined
      if (params.cursor !== undefined) {
        const decoded = cursors.decode(params, params.cursor)
        if (typeof decoded === 'string') throw invalidRequest([{ parameter: 'cursor', detail: decoded }])
        after = decoded
      }
      const nowMs = clock()
      const hits = await search(
        {
          latitude: params.latitude,
          longitude: params.longitude,
          radiusMeters: params.radiusKm * 1000,
          sort: params.sort,
          minDiscountRate: params.minDiscountRate,
          limit: params.limit,
          after,
          nowMs,
        },
        discovery.candidates,
      )
      const page = hits.slice(0, params.limit)
      const found = new Map((await discovery.states(page)).map((listing) => [listing.state.id, listing]))
      const data: DiscoverPage['data'] = []
      for (const hit of page) {
        const listing = found.get(hit.id)
        if (!listing) continue
        const { state, industry } = listing
        // Changed since the candidate query: no longer discoverable.
        if (listing.soldOut || state.withdrawn_at_ms !== null || state.discount_rate < params.minDiscountRate) continue
        data.push({ distanceMeters: Math.round(hit.distance), listing: { ...listingView(state, industry, nowMs), providerId: state.provider_id } })
      }
      const last = page.at(-1)
      const nextCursor =
        hits.length > params.limit && last
          ? cursors.encode(params, { key: params.sort === 'distance' ? last.distance : last.expiresAtUnix, id: last.id })
          : null
      return { data, nextCursor } satisfies DiscoverPage
    },
  )
}
