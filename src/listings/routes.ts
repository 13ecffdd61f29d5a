import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Clock } from '../clock.js'
import { clientGone } from '../http/client-gone.js'
import { notModified } from '../http/conditional.js'
import { jsonResponse, notModifiedResponse } from '../http/openapi.js'
import { defaultsFilled } from '../http/validation.js'
import { providerOf } from '../providers/authenticate.js'
import { createListing, type CreateListingDeps } from './create-listing.js'
import { pageEntityTag, pageJson } from './page-view.js'
import type { Representations } from './representations.js'
import type { ListingRepository } from './repository.js'
import {
  CreateListingBody,
  CreateListingResponse,
  exampleCreated,
  exampleListingsPage,
  IfNoneMatchHeaders,
  ListingsPage,
  ListListingsQuery,
  type CreateListingInput,
  type ListListingsParams,
} from './schemas.js'

const EXAMPLE_PAGE_ETAG = 'W/"0Y2hVJ3m0c7r9yVt1QeJx1LmMq9c8Vn"'
const PAGE_ETAG = {
  ETag: {
    type: 'string',
    description: 'Names this page as it is now (weak: the same for every Content-Encoding); `If-None-Match` takes it.',
    examples: [EXAMPLE_PAGE_ETAG],
  },
}

export interface ListingRoutesOptions {
  listings: ListingRepository
  representations: Representations
  create: CreateListingDeps
  clock: Clock
}

export const listingRoutes: FastifyPluginAsyncTypebox<ListingRoutesOptions> = async (app, { listings, representations, create, clock }) => {
  app.post(
    '/listing/create',
    {
      schema: {
        operationId: 'createListing',
        tags: ['listings'],
        summary: 'Create a listing',
        description:
          'Order of work: authenticate, parse the JSON body (at most 1 MiB), validate all of it (every problem ' +
          'is reported at once), check `referenceId`, fetch and check every image, store the listing and its ' +
          'items in one transaction. A request that fails stores nothing and does not reserve its `referenceId`.',
        body: defaultsFilled<CreateListingInput>(CreateListingBody),
        response: {
          200: jsonResponse(
            'An earlier request with this referenceId and the same body (after defaults) created the listing: ' +
              'its answer again. Nothing is stored and no image is fetched.',
            CreateListingResponse,
            { replayed: exampleCreated },
          ),
          201: jsonResponse('The listing is stored.', CreateListingResponse, { created: exampleCreated }),
        },
        'x-problems': [
          'invalid-request',
          'image-unavailable',
          'conflict',
          'payload-too-large',
          'image-too-large',
          'unsupported-media-type',
          'unsupported-image-format',
          'internal',
          'unavailable',
        ],
      },
    },
    async (request, reply) => {
      const outcome = await createListing(create, providerOf(request), request.body, () => clientGone(reply))
      return reply.code(outcome.status).send(outcome.body)
    },
  )

  app.get(
    '/listing',
    {
      schema: {
        operationId: 'listListings',
        tags: ['listings'],
        summary: 'List your listings, newest first',
        description:
          'Only your own listings, every status, newest first (creation time, then id, descending): pages ' +
          'never repeat or skip a listing while nothing is created. Unknown, repeated or empty query ' +
          'parameters are refused. Each page has an ETag: send it back in `If-None-Match` and an unchanged ' +
          'page answers `304` with no body.',
        querystring: defaultsFilled<ListListingsParams>(ListListingsQuery),
        headers: IfNoneMatchHeaders,
        response: {
          200: jsonResponse('One page of your listings.', ListingsPage, { page: exampleListingsPage }, PAGE_ETAG),
          304: notModifiedResponse(EXAMPLE_PAGE_ETAG),
        },
        'x-problems': ['invalid-request', 'internal', 'unavailable'],
      },
    },
    async (request, reply) => {
      const provider = providerOf(request)
      const page = await listings.page(provider.id, request.query)
      const nowMs = clock()
      // The tag comes from what the query read, so an unchanged page answers 304 without a body made.
      const etag = pageEntityTag(page, provider.industry, nowMs)
      reply.header('etag', etag).header('cache-control', 'private, no-cache').header('vary', 'accept-encoding')
      if (notModified(request.headers['if-none-match'], etag)) return reply.code(304).send()
      // JSON as the ListingsPage schema describes it (test/conformance.ts checks every page against it).
      return reply.type('application/json; charset=utf-8').send(pageJson(page, provider.industry, nowMs, representations))
    },
  )
}
