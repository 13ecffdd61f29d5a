import type { FastifyPluginAsync } from 'fastify'
import type { Clock } from '../clock.js'
import { providerOf } from '../providers/authenticate.js'
import { createListing, type CreateListingDeps } from './create-listing.js'
import { pageJson } from './page-json.js'
import type { ListingRepository } from './repository.js'
import {
  CreateListingBody,
  CreateListingResponse,
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
        summary: 'Create a listing',
        body: CreateListingBody,
        response: { 200: CreateListingResponse, 201: CreateListingResponse },
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
        summary: 'List your listings, newest first',
        querystring: ListListingsQuery,
        response: { 200: ListingsPage },
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
