import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { TSchema } from 'typebox'
import type { Clock } from '../clock.js'
import type { Transact } from '../db/write-transaction.js'
import { invalidRequest, notFoundParameter, preconditionFailed, Problem } from '../errors.js'
import { ifMatchOf, notModified } from '../http/conditional.js'
import { jsonResponse, listingEtagHeader, notModifiedResponse } from '../http/openapi.js'
import { BODY_PROBLEMS } from '../http/problem-responses.js'
import { UNSTORABLE } from '../http/schema-vocabulary.js'
import { LISTING_ID } from '../ids.js'
import { providerOf } from '../providers/authenticate.js'
import type { Provider } from '../providers/repository.js'
import { patchBodyProblems, patchListing, withdrawListing, type ChangeArgs, type ChangeOutcome } from './changes.js'
import { effective, type ListingState } from './listing-state.js'
import { listingEtag, listingView } from './listing-view.js'
import type { ListingRepository } from './repository.js'
import { exampleListingView, IfMatchHeaders, IfNoneMatchHeaders, ListingIdParams, ListingView, PatchListingBody, ReferenceIdParams } from './schemas.js'

export interface OneListingRoutesOptions {
  listings: ListingRepository
  transact: Transact
  clock: Clock
}

const notFound = (parameter: 'listingId' | 'referenceId') => notFoundParameter(parameter, `no listing of yours has this ${parameter}`)

function sendListing(reply: FastifyReply, state: ListingState, provider: Provider, nowMs: number) {
  const view = listingView(state, provider.industry, nowMs)
  return reply.header('etag', listingEtag(view)).send(view)
}

function answer(reply: FastifyReply, outcome: ChangeOutcome, provider: Provider, nowMs: number) {
  switch (outcome.kind) {
    case 'not-found':
      throw notFound('listingId')
    case 'precondition-failed':
      throw preconditionFailed(outcome.version)
    case 'closed':
      throw new Problem('listing-closed', `the listing is ${outcome.status}: it can no longer change`)
    case 'invalid':
      throw invalidRequest(outcome.errors)
    case 'insufficient':
      throw new Problem('insufficient-stock', 'a quantity would go below the units reservations hold', { errors: outcome.errors })
    case 'done':
      return sendListing(reply, outcome.listing, provider, nowMs)
  }
}

const listingResponse = (description: string) => jsonResponse(description, ListingView, { listing: exampleListingView }, listingEtagHeader)

export const oneListingRoutes: FastifyPluginAsyncTypebox<OneListingRoutesOptions> = async (app, { listings, transact, clock }) => {
  const readRoute = (
    url: string,
    parameter: 'listingId' | 'referenceId',
    schema: { operationId: string; summary: string; description: string; params: TSchema },
    find: (providerId: string, value: string) => Promise<ListingState | undefined>,
  ) =>
    app.get(
      url,
      {
        schema: {
          ...schema,
          tags: ['listings'],
          headers: IfNoneMatchHeaders,
          response: { 200: listingResponse('The listing.'), 304: notModifiedResponse('"3"') },
          'x-problems': ['invalid-request', 'not-found', 'internal', 'unavailable'],
        },
      },
      async (request, reply) => {
        const provider = providerOf(request)
        // Typed by hand: the two routes' params differ, and this handler serves both.
        const state = await find(provider.id, (request.params as Record<string, string>)[parameter] ?? '')
        if (!state) throw notFound(parameter)
        const nowMs = clock()
        // One ETag (the version) for every Content-Encoding, and most bodies are large enough to be compressed.
        reply.header('cache-control', 'private, no-cache').header('vary', 'accept-encoding')
        // A client polling an unchanged listing costs the lookup only: nothing is rendered.
        const etag = listingEtag(effective(state, nowMs))
        if (notModified(request.headers['if-none-match'], etag)) return reply.code(304).header('etag', etag).send()
        return sendListing(reply, state, provider, nowMs)
      },
    )

  readRoute(
    '/listing/:listingId',
    'listingId',
    {
      operationId: 'getListing',
      summary: 'Read one of your listings',
      description:
        'The listing as it is now, with its version as ETag; send the ETag back in `If-None-Match` and an ' +
        'unchanged listing answers `304` with no body. Another provider’s listing is `404`, as an unknown id is.',
      params: ListingIdParams,
    },
    async (providerId, listingId) => (LISTING_ID.test(listingId) ? listings.findOne('id', providerId, listingId) : undefined),
  )

  readRoute(
    '/listing/by-reference/:referenceId',
    'referenceId',
    {
      operationId: 'getListingByReference',
      summary: 'Read one of your listings by your referenceId',
      description: 'As `GET /api/v1/listing/{listingId}`, found by the referenceId you created it with.',
      params: ReferenceIdParams,
    },
    // What create refuses as a referenceId names no listing; it is not even looked up (PostgreSQL would refuse
    // a NUL in a query parameter as an error).
    async (providerId, referenceId) =>
      referenceId.length >= 1 && referenceId.length <= 255 && !UNSTORABLE.test(referenceId)
        ? listings.findOne('reference_id', providerId, referenceId)
        : undefined,
  )

  /** PATCH and withdraw, once the body is checked. A listingId of another shape names no listing: it is not looked up. */
  const change = async (
    request: FastifyRequest & { params: { listingId: string } },
    reply: FastifyReply,
    apply: (args: ChangeArgs) => Promise<ChangeOutcome>,
  ) => {
    const provider = providerOf(request)
    const { listingId } = request.params
    if (!LISTING_ID.test(listingId)) throw notFound('listingId')
    const nowMs = clock()
    const outcome = await apply({ providerId: provider.id, listingId, ifMatch: ifMatchOf(request.headers['if-match']), nowMs })
    return answer(reply, outcome, provider, nowMs)
  }

  app.patch(
    '/listing/:listingId',
    {
      schema: {
        operationId: 'updateListing',
        tags: ['listings'],
        summary: 'Change quantities, prices or the discount of a listing',
        description:
          'Only an `active` or `sold_out` listing changes. Items are named by `position`, their index in the ' +
          'created order. A body whose values are all the current ones changes nothing: `200`, same version, no ' +
          'event. Otherwise the version grows by 1 and a `listing.updated` event is recorded with the change. ' +
          'Concurrent changes of one listing are applied one after the other, each to the version before it. ' +
          'Checked in this order: the body (`400`), the listing (`404`), `If-Match` (`412`), its status (`409`), ' +
          'the positions (`400`), then the units reservations hold (`409` insufficient-stock, naming each item with its `held`).',
        params: ListingIdParams,
        headers: IfMatchHeaders,
        body: PatchListingBody,
        response: { 200: listingResponse('The listing after the change (or unchanged), with its new ETag.') },
        'x-problems': ['invalid-request', 'not-found', 'listing-closed', 'insufficient-stock', 'precondition-failed', ...BODY_PROBLEMS],
      },
    },
    async (request, reply) => {
      const patch = request.body
      const problems = patchBodyProblems(patch)
      if (problems.length > 0) throw invalidRequest(problems)
      return change(request, reply, (args) => transact(patchListing, { ...args, patch }))
    },
  )

  app.post(
    '/listing/:listingId/withdraw',
    {
      schema: {
        operationId: 'withdrawListing',
        tags: ['listings'],
        summary: 'Withdraw a listing',
        description:
          'Takes the listing down for good: its status becomes `withdrawn`, its version grows by 1 and a ' +
          '`listing.withdrawn` event is recorded; every reservation held on it is released (`endedBy: "listing_withdrawn"`). Withdrawing it again changes nothing and answers `200` as well. ' +
          'An expired listing cannot be withdrawn (`409`). No body (or an empty JSON object).',
        params: ListingIdParams,
        headers: IfMatchHeaders,
        response: { 200: listingResponse('The withdrawn listing, with its ETag.') },
        // No body is wanted, but one is read like any other: over the limit, or not JSON, it is refused as such.
        'x-problems': ['invalid-request', 'not-found', 'listing-closed', 'precondition-failed', ...BODY_PROBLEMS],
      },
    },
    async (request, reply) => {
      if (request.body !== undefined && !isEmptyObject(request.body)) {
        throw invalidRequest([{ pointer: '', detail: 'must be absent: withdraw takes no body' }])
      }
      return change(request, reply, (args) => transact(withdrawListing, args))
    },
  )
}

const isEmptyObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0
