import { Type, type Static } from 'typebox'
import { named, ref } from '../http/components.js'
import { ifMatchHeaders, Timestamp } from '../listings/schemas.js'

/* These schemas are also the OpenAPI document and the reservation events' data. */

const closed = { additionalProperties: false } as const

export const ReservationStatuses = ['held', 'confirmed', 'released', 'expired', 'cancelled'] as const
export type ReservationStatus = (typeof ReservationStatuses)[number]
export const EndedBy = ['marketplace', 'provider', 'listing_withdrawn'] as const

/** A listingId as a hold or the list takes it. Text: a NUL could not even be looked up in PostgreSQL. */
const listingIdText = { minLength: 1, maxLength: 100, format: 'text' } as const

const Position = Type.Integer({ minimum: 0, maximum: 99, description: 'Which item of the listing: its index in the created order.' })

export const CreateReservationBody = Type.Object(
  {
    listingId: Type.String({ ...listingIdText, description: 'The listing to hold units of (a discovery entry’s `listing.id`).' }),
    referenceId: Type.String({
      minLength: 1,
      maxLength: 255,
      format: 'text',
      description: 'Your identifier for this reservation (e.g. the basket), unique among yours: sending the same body again is safe.',
    }),
    items: Type.Array(
      Type.Object(
        {
          position: Position,
          quantity: Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Units to hold, 1 to 1,000,000.' }),
        },
        closed,
      ),
      { minItems: 1, maxItems: 100, description: '1 to 100 lines, each position at most once. All are held, or none.' },
    ),
    holdSeconds: Type.Optional(
      Type.Integer({
        minimum: 30,
        maximum: 3600,
        description:
          'How long the units stay held unless confirmed or released: 30 to 3600 s; RESERVATION_HOLD_SECONDS (600) when absent. Never past the listing’s expiry.',
      }),
    ),
  },
  { ...closed, examples: [{ listingId: '01KAXYZ0000000ABCDEFGHJKMN', referenceId: 'basket-8812', items: [{ position: 0, quantity: 2 }], holdSeconds: 600 }] },
)
export type CreateReservationInput = Static<typeof CreateReservationBody>

const ReservedItem = Type.Object(
  {
    position: Position,
    quantity: Type.Integer({ description: 'Units reserved.' }),
    price: Type.Number({ description: 'The item’s unit price when the reservation was made.' }),
    nameAr: Type.String(),
    nameEn: Type.String(),
  },
  closed,
)

export const ReservationView = Type.Object(
  {
    id: Type.String({ pattern: '^rsv_', description: 'The reservation’s id: unguessable.' }),
    status: Type.Enum(ReservationStatuses, {
      description:
        '`held` → `confirmed` | `released` | `expired`; `confirmed` → `cancelled`. A held reservation reads `expired` from the instant its `expiresAt` has come.',
    }),
    version: Type.Integer({ minimum: 1, description: 'Grows by 1 with every change of status (an expiry included); the ETag.' }),
    referenceId: Type.String(),
    listingId: Type.String(),
    providerId: Type.String(),
    marketplace: Type.Object({ id: Type.String(), name: Type.String() }, { ...closed, description: 'The marketplace that made it.' }),
    items: Type.Array(ReservedItem, { description: 'In the order the request gave them; prices and names of the moment it was made.' }),
    discountRate: Type.Number({ description: 'The listing’s discount when the reservation was made.' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    expiresAt: { ...Timestamp, description: 'Until when the units are held: the earlier of creation + holdSeconds and the listing’s expiry.' },
    endedBy: Type.Union([Type.Enum(EndedBy), Type.Null()], {
      description: 'Who released or cancelled it: `marketplace`, `provider` or `listing_withdrawn`; null otherwise.',
    }),
  },
  closed,
)
named('Reservation', ReservationView)
export type ReservationView = Static<typeof ReservationView>

export const exampleReservation: ReservationView = {
  id: 'rsv_01M7YQ1WE0XK8J4Q2ZB5N6C7D8',
  status: 'held',
  version: 1,
  referenceId: 'basket-8812',
  listingId: '01KAXYZ0000000ABCDEFGHJKMN',
  providerId: 'prv_01M7YQ1WE0XK8J4Q2ZB5N6C7D8',
  marketplace: { id: 'mkt_01M7YQ1WE0XK8J4Q2ZB5N6C7D8', name: 'Deals App' },
  items: [{ position: 0, quantity: 2, price: 7.5, nameAr: 'كرواسون', nameEn: 'Croissant' }],
  discountRate: 0.4,
  createdAt: '2026-11-27T18:00:00.000Z',
  updatedAt: '2026-11-27T18:00:00.000Z',
  expiresAt: '2026-11-27T18:10:00.000Z',
  endedBy: null,
}

export const ReservationIdParams = Type.Object(
  { reservationId: Type.String({ description: 'The reservation’s id.', examples: [exampleReservation.id] }) },
  closed,
)

/** A cursor of the shape the service issues (its payload, a dot, its signature): for the document only. */
const exampleCursor = `${Buffer.from(JSON.stringify({ q: 'Qm7tR2v8LkcF0nXw', k: 1795716000000, id: exampleReservation.id })).toString('base64url')}.tP3xW9a2Lk0Vb7Rq1Zs8Yc`

/** `If-Match` on confirm, release and cancel: the listing routes' header, of a reservation's version. */
export const ReservationIfMatchHeaders = ifMatchHeaders(
  'Act only if the reservation’s current version is this one: its ETag, e.g. `"1"` (a list of them, or `*`, also works). ' +
    'Otherwise `412` and nothing changes. Without it the action applies to whatever the current version is.',
)

export const ReservationsQuery = Type.Object(
  {
    status: Type.Optional(Type.Enum(ReservationStatuses, { description: 'Only reservations in this status now.', examples: ['held'] })),
    listingId: Type.Optional(Type.String({ ...listingIdText, description: 'Only reservations of this listing.', examples: [exampleReservation.listingId] })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Reservations per page, 1 to 100.', examples: [20] })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: 'The previous page’s `nextCursor`.', examples: [exampleCursor] })),
  },
  closed,
)
export type ReservationsParams = Static<typeof ReservationsQuery> & { limit: number }

export const ReservationsPage = Type.Object(
  {
    data: Type.Array(ref(ReservationView), { description: 'Newest first (createdAt, then id, descending).' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last.' }),
  },
  closed,
)
named('ReservationsPage', ReservationsPage)

export const StockView = Type.Object(
  {
    listingId: Type.String(),
    version: Type.Integer({ description: 'The listing’s version.' }),
    items: Type.Array(
      Type.Object(
        {
          position: Position,
          quantity: Type.Integer({ description: 'Units not yet sold.' }),
          held: Type.Integer({ description: 'Units in reservations held now.' }),
          available: Type.Integer({ description: '`quantity` − `held`: what can be reserved now (0 while the listing is not active).' }),
        },
        closed,
      ),
    ),
  },
  closed,
)
named('Stock', StockView)
export type StockView = Static<typeof StockView>
