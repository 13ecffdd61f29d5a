import type { FastifyPluginAsync } from 'fastify'
import type { Clock } from '../clock.js'
import { jsonResponse } from '../http/openapi.js'
import { providerOf } from '../providers/authenticate.js'
import { createListing, type CreateListingDeps } from './create-listing.js'
import { pageJson } from './page-json.js'
import type { ListingRepository } from './repository.js'
import {
  CreateListingBody,
  CreateListingResponse,
  exampleCreated,
  exampleListingsPage,
  ListingsPage,
  ListListingsQuery,
  type CreateListingInput,
  type ListListingsParams,
} from './schemas.js'

export interface ListingRoutesOptions {
  listings: ListingRepository
  create: CreateListingDeps
  clock: Clock
}

export const listingRoutes: FastifyPluginAsync<ListingRoutesOptions> = async (app, { listings, create, clock }) => {
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
        body: CreateListingBody,
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
      // The validator has checked the body against CreateListingBody and filled its defaults.
      const outcome = await createListing(create, providerOf(request), request.body as CreateListingInput)
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
          'parameters are refused.',
        querystring: ListListingsQuery,
        response: { 200: jsonResponse('One page of your listings.', ListingsPage, { page: exampleListingsPage }) },
        'x-problems': ['invalid-request', 'internal', 'unavailable'],
      },
    },
    async (request, reply) => {
      const provider = providerOf(request)
      const { recordCount, listings: page } = await listings.page(provider.id, request.query as ListListingsParams)
      // Written as text (see page-json.ts); Fastify sends a string with a JSON content type as it is.
      return reply.type('application/json; charset=utf-8').send(pageJson(recordCount, page, provider.industry, clock()))
    },
  )
}
