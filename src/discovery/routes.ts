import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { TSchema } from 'typebox'
import type { Clock } from '../clock.js'
import { invalidRequest } from '../errors.js'
import { jsonResponse } from '../http/openapi.js'
import { defaultsFilled } from '../http/validation.js'
import type { CursorCodec, CursorKey } from './cursor.js'
import { DiscoveredJsonCache, discoveredListingJson } from './listing-json.js'
import type { DiscoveryRepository } from './repository.js'
import { DiscoverPage, DiscoverQuery, exampleDiscoverPage, type DiscoverParams } from './schemas.js'
import { search } from './search.js'

export interface DiscoveryRoutesOptions {
  discovery: DiscoveryRepository
  cursors: CursorCodec
  clock: Clock
}

const PAGE_START = Buffer.from('{"data":[')
const ENTRY_END = Buffer.from('}')

/** docs/api.md#discovery: every provider's active listings around a point, for marketplaces. */
export const discoveryRoutes: FastifyPluginAsyncTypebox<DiscoveryRoutesOptions> = async (app, { discovery, cursors, clock }) => {
  const listingTexts = new DiscoveredJsonCache()
  app.get(
    '/discover',
    {
      config: { principal: 'marketplace' },
      schema: {
        operationId: 'discoverListings',
        tags: ['discovery'],
        summary: 'Active listings of every provider near a point (marketplace tokens only)',
        description:
          'Listings `active` now (not withdrawn, not expired, not sold out) within `radiusKm` of the point by ' +
          'great-circle distance, discounted at least `minDiscountRate`, nearest first or ending soonest. Follow ' +
          '`nextCursor` for more: each listing comes at most once while nothing changes. A provider’s token is ' +
          '`403`; this route is for marketplace tokens (`listing-service marketplace create`).',
        querystring: defaultsFilled<DiscoverParams>(DiscoverQuery),
        response: {
          // Widened to an untyped reply while the handler sends the page as bytes it wrote itself.
          200: jsonResponse('A page of listings.', DiscoverPage as TSchema, {
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
      // Each listing's text by the version the candidate query read; only the others are read whole.
      const texts = new Map<string, Buffer>()
      for (const hit of page) {
        const json = listingTexts.get(hit.id, hit.version)
        if (json !== undefined) texts.set(hit.id, json)
      }
      const missing = page.filter((hit) => !texts.has(hit.id)).map((hit) => hit.id)
      for (const found of await discovery.states(missing)) {
        const { state } = found
        // Changed since the candidate query (withdrawn, sold out, discounted less): no longer discoverable, left out.
        if (found.soldOut || state.withdrawn_at_ms !== null || state.discount_rate < params.minDiscountRate) continue
        const json = discoveredListingJson(state, found.industry, nowMs)
        listingTexts.set(state.id, state.version, json)
        texts.set(state.id, json)
      }
      const last = page.at(-1)
      const nextCursor =
        hits.length > params.limit && last
          ? cursors.encode(params, { key: params.sort === 'distance' ? last.distance : last.expiresAtUnix, id: last.id })
          : null
      // The listings' bytes with the page's own around them, in the DiscoverPage schema's order; Fastify sends
      // a Buffer as it is.
      const parts: Buffer[] = [PAGE_START]
      for (const hit of page) {
        const json = texts.get(hit.id)
        if (json === undefined) continue
        parts.push(Buffer.from(`${parts.length === 1 ? '' : ','}{"distanceMeters":${Math.round(hit.distance)},"listing":`, 'latin1'), json, ENTRY_END)
      }
      parts.push(Buffer.from(`],"nextCursor":${nextCursor === null ? 'null' : JSON.stringify(nextCursor)}}`))
      return reply.type('application/json; charset=utf-8').send(Buffer.concat(parts))
    },
  )
}
