import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply } from 'fastify'
import { createHash } from 'node:crypto'
import type { Clock } from '../clock.js'
import type { Transact } from '../db/write-transaction.js'
import type { CursorCodec } from '../discovery/cursor.js'
import { invalidRequest, notFoundParameter, preconditionFailed, Problem, referenceConflict, type ProblemDetail } from '../errors.js'
import { ifMatchOf } from '../http/conditional.js'
import { jsonResponse } from '../http/openapi.js'
import { BODY_PROBLEMS } from '../http/problem-responses.js'
import { defaultsFilled } from '../http/validation.js'
import { ownerOf } from '../events/owner.js'
import { LISTING_ID } from '../ids.js'
import { ListingIdParams } from '../listings/schemas.js'
import { principalOf } from '../providers/authenticate.js'
import type { ListingHolds } from './holds.js'
import type { ReservationRepository } from './repository.js'
import { reservationEtag, reservationView } from './reservation.js'
import {
  CreateReservationBody,
  exampleReservation,
  ReservationIdParams,
  ReservationIfMatchHeaders,
  ReservationsPage,
  ReservationsQuery,
  ReservationView,
  StockView,
  type CreateReservationInput,
  type ReservationsParams,
} from './schemas.js'
import { endReservation, type Action, type EndOutcome, type HoldOutcome } from './transactions.js'

export interface ReservationRoutesOptions {
  reservations: ReservationRepository
  holds: ListingHolds
  transact: Transact
  cursors: CursorCodec
  clock: Clock
  holdSeconds: number
}

const RESERVATION_ID = /^rsv_[0-9A-HJKMNP-TV-Z]{26}$/

const notFound = () => notFoundParameter('reservationId', 'no reservation of yours has this id')

const etagHeader = { ETag: { type: 'string', description: 'The reservation’s version in quotes: what `If-Match` names.', examples: ['"1"'] } }
const reservationResponse = (description: string) => jsonResponse(description, ReservationView, { reservation: exampleReservation }, etagHeader)

/** Every position at most once: the later entry is named. */
function repeatedPositions(input: CreateReservationInput): ProblemDetail[] {
  const seen = new Set<number>()
  return input.items.flatMap(({ position }, k) => {
    const again = seen.has(position)
    seen.add(position)
    return again ? [{ pointer: `/items/${k}/position`, detail: 'is given more than once' }] : []
  })
}

function send(reply: FastifyReply, code: number, reservation: ReservationView) {
  return reply.code(code).header('etag', reservationEtag(reservation.version)).header('cache-control', 'no-store').send(reservation)
}

function answerHold(reply: FastifyReply, outcome: HoldOutcome) {
  switch (outcome.kind) {
    case 'made':
      reply.header('location', `/api/v1/reservations/${outcome.reservation.id}`)
      return send(reply, 201, outcome.reservation)
    case 'replayed':
      return send(reply, 200, outcome.reservation)
    case 'conflict':
      throw referenceConflict('reservations')
    case 'not-found':
      throw new Problem('not-found', 'no listing has this listingId', { errors: [{ pointer: '/listingId', detail: 'no listing has this id' }] })
    case 'closed':
      throw new Problem('listing-closed', `the listing is ${outcome.status}: nothing of it can be reserved`)
    case 'invalid':
      throw invalidRequest(outcome.errors)
    case 'short':
      throw new Problem('insufficient-stock', 'not every line fits in what is available: nothing is held', { errors: outcome.errors })
  }
}

function answerEnd(reply: FastifyReply, outcome: EndOutcome, action: Action) {
  switch (outcome.kind) {
    case 'not-found':
      throw notFound()
    case 'precondition-failed':
      throw preconditionFailed(outcome.version)
    case 'expired':
      throw new Problem('reservation-expired', 'the hold ran out before it was confirmed: its units are free again')
    case 'closed':
      throw new Problem(
        'reservation-closed',
        `the reservation is ${outcome.status}: it cannot ${action === 'confirm' ? 'be confirmed' : 'be released (cancel a confirmed one)'}`,
      )
    case 'done':
      return send(reply, 200, outcome.reservation)
  }
}

const isEmptyObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0

export const reservationRoutes: FastifyPluginAsyncTypebox<ReservationRoutesOptions> = async (
  app,
  { reservations, holds, transact, cursors, clock, holdSeconds },
) => {
  app.post(
    '/reservations',
    {
      config: { principal: 'marketplace' },
      schema: {
        operationId: 'createReservation',
        tags: ['reservations'],
        summary: 'Hold units of a listing’s items (marketplace tokens only)',
        description:
          'All lines are held, or none. Checked in this order: the body (`400`), your referenceId (the same body again is `200` with the ' +
          'reservation as it is now; another body `409`), the listing (`404`; `409` listing-closed unless active), the positions (`400`), ' +
          'the stock (`409` insufficient-stock naming every short line with what is available). The hold ends at the earlier of now + ' +
          '`holdSeconds` and the listing’s expiry; confirm it before then.',
        body: CreateReservationBody,
        response: {
          201: reservationResponse('Held: the reservation, its URL in Location.'),
          200: reservationResponse('A replay of the same referenceId and body: the reservation as it is now.'),
        },
        'x-problems': ['invalid-request', 'not-found', 'conflict', 'listing-closed', 'insufficient-stock', ...BODY_PROBLEMS],
      },
    },
    async (request, reply) => {
      const principal = principalOf(request)
      if (principal.kind !== 'marketplace') throw new Error('a marketplace route')
      const input = request.body
      const repeated = repeatedPositions(input)
      if (repeated.length > 0) throw invalidRequest(repeated)
      const seconds = input.holdSeconds ?? holdSeconds
      const lines = input.items.map(({ position, quantity }) => ({ position, quantity }))
      const fingerprint = createHash('sha256')
        .update(JSON.stringify([input.listingId, input.referenceId, lines, seconds]))
        .digest('hex')
      const outcome = await holds.hold({
        marketplace: { id: principal.marketplace.id, name: principal.marketplace.name },
        listingId: input.listingId,
        referenceId: input.referenceId,
        lines,
        holdSeconds: seconds,
        requestHash: fingerprint,
        nowMs: clock(),
      })
      return answerHold(reply, outcome)
    },
  )

  app.get(
    '/reservations/:reservationId',
    {
      config: { principal: 'any' },
      schema: {
        operationId: 'getReservation',
        tags: ['reservations'],
        summary: 'Read one reservation',
        description: 'For the marketplace that made it and the provider of its listing; anyone else gets `404`, as for an unknown id.',
        params: ReservationIdParams,
        response: { 200: reservationResponse('The reservation now, with its version as ETag.') },
        // No id is refused as malformed: one that cannot be a reservation's is as unknown as one that does not exist.
        'x-problems': ['not-found', 'internal', 'unavailable'],
      },
    },
    async (request, reply) => {
      const { reservationId } = request.params
      const found = RESERVATION_ID.test(reservationId) ? await reservations.findOne(principalOf(request), reservationId, clock()) : undefined
      if (!found) throw notFound()
      return send(reply, 200, found)
    },
  )

  app.get(
    '/reservations',
    {
      config: { principal: 'any' },
      schema: {
        operationId: 'listReservations',
        tags: ['reservations'],
        summary: 'Your reservations, newest first',
        description:
          'A marketplace sees those it made; a provider those on its listings. Filter by `status` (as read now: a held one past its expiry is `expired`) ' +
          'or `listingId`; follow `nextCursor` for more.',
        querystring: defaultsFilled<ReservationsParams>(ReservationsQuery),
        response: { 200: jsonResponse('A page of reservations.', ReservationsPage, { page: { data: [exampleReservation], nextCursor: null } }) },
        'x-problems': ['invalid-request', 'internal', 'unavailable'],
      },
    },
    async (request, reply) => {
      const principal = principalOf(request)
      const params = request.query
      const query = JSON.stringify(['reservations', ownerOf(principal).id, params.status ?? null, params.listingId ?? null])
      const after = cursors.after(query, params.cursor, 'was given for another status or listingId')
      const nowMs = clock()
      const rows = await reservations.page(principal, { status: params.status, listingId: params.listingId, limit: params.limit, after }, nowMs)
      const page = rows.slice(0, params.limit)
      const last = page.at(-1)
      const nextCursor = rows.length > params.limit && last ? cursors.encode(query, { key: last.created_at_ms, id: last.id }) : null
      reply.header('cache-control', 'no-store')
      return { data: page.map((row) => reservationView(row, nowMs)), nextCursor }
    },
  )

  const endRoute = (
    action: Action,
    principal: 'marketplace' | 'any',
    summary: string,
    description: string,
    problems: Array<'reservation-expired' | 'reservation-closed'>,
  ) =>
    app.post(
      `/reservations/:reservationId/${action}`,
      {
        config: { principal },
        schema: {
          operationId: `${action}Reservation`,
          tags: ['reservations'],
          summary,
          description: `${description} No body (or an empty JSON object); \`If-Match: "<version>"\` is optional, another version is \`412\`.`,
          params: ReservationIdParams,
          headers: ReservationIfMatchHeaders,
          response: { 200: reservationResponse('The reservation after the change (or as it was, when nothing changes).') },
          // No body is wanted, but one is read like any other: over the limit, or not JSON, it is refused as such.
          'x-problems': ['invalid-request', 'not-found', ...problems, 'precondition-failed', ...BODY_PROBLEMS],
        },
      },
      async (request, reply) => {
        if (request.body !== undefined && request.body !== null && !isEmptyObject(request.body)) {
          throw invalidRequest([{ pointer: '', detail: `must be absent: ${action} takes no body` }])
        }
        const { reservationId } = request.params
        if (!RESERVATION_ID.test(reservationId)) throw notFound()
        const actor = ownerOf(principalOf(request))
        const ifMatch = ifMatchOf(request.headers['if-match'])
        const outcome = await transact(endReservation, { actor, reservationId, action, ifMatch, nowMs: clock() })
        return answerEnd(reply, outcome, action)
      },
    )

  endRoute(
    'confirm',
    'marketplace',
    'Confirm a hold: the units are sold (the marketplace that made it)',
    '`held` → `confirmed`: its units leave the items’ `quantity` (the listing’s version + 1, a `listing.updated` event). Already confirmed: `200`, nothing changes. ' +
      'A hold that ran out is `409` reservation-expired; a released or cancelled one `409` reservation-closed.',
    ['reservation-expired', 'reservation-closed'],
  )
  endRoute(
    'release',
    'marketplace',
    'Release a hold: the units are free again (the marketplace that made it)',
    '`held` → `released`. Already released or expired: `200`, nothing changes. A confirmed or cancelled one is `409` reservation-closed: cancel a confirmed one instead.',
    ['reservation-closed'],
  )
  endRoute(
    'cancel',
    'any',
    'Cancel a reservation (the marketplace that made it, or the listing’s provider)',
    '`confirmed` → `cancelled`: its units return to `quantity` while the listing is active or sold out. `held` → `released`. `endedBy` says who. ' +
      'Already ended: `200`, nothing changes.',
    [],
  )

  app.get(
    '/listing/:listingId/stock',
    {
      config: { principal: 'any' },
      schema: {
        operationId: 'getListingStock',
        tags: ['reservations'],
        summary: 'A listing’s stock now: quantity, held and available per item',
        description:
          'For the listing’s provider, and for any marketplace while the listing is active (otherwise `404`). Exact at this instant: a hold that ran out counts no more. Never cached.',
        params: ListingIdParams,
        response: {
          200: jsonResponse('The stock.', StockView, {
            stock: { listingId: exampleReservation.listingId, version: 3, items: [{ position: 0, quantity: 10, held: 2, available: 8 }] },
          }),
        },
        'x-problems': ['not-found', 'internal', 'unavailable'],
      },
    },
    async (request, reply) => {
      const { listingId } = request.params
      const stock = LISTING_ID.test(listingId) ? await reservations.stock(principalOf(request), listingId, clock()) : undefined
      if (!stock) throw notFoundParameter('listingId', 'no listing you can see has this id')
      return reply.header('cache-control', 'no-store').send(stock)
    },
  )
}
