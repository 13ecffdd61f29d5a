import { Type, type Static, type TSchema } from 'typebox'
import { named, ref } from '../http/components.js'
import { exampleListingView, ListingView, Timestamp } from '../listings/schemas.js'
import { ReservationView } from '../reservations/schemas.js'
import { EventTypes, ListingEventTypes, ReservationEventTypes } from './types.js'

/** An event is also a webhook delivery's body. */

const closed = { additionalProperties: false } as const

export const EventType = Type.Enum(EventTypes, {
  description:
    '`listing.created`, `listing.updated` (a PATCH that changed something), `listing.withdrawn`, ' +
    '`listing.expired` (recorded within seconds of expiresAtUnix): a provider’s listings. `reservation.held`, ' +
    '`reservation.confirmed`, `reservation.released`, `reservation.expired`, `reservation.cancelled`: to the ' +
    'listing’s provider and to the marketplace that made the reservation.',
})
named('EventType', EventType)

/** An event of one kind: its types, and the schema of its data. */
const eventOfKind = <Types extends TSchema, Data extends TSchema>(type: Types, data: Data) =>
  Type.Object(
    {
      id: Type.String({ description: 'Unique; `webhook-id` of its deliveries; `after` in the feed.', examples: ['evt_01M7YQ1WE0XK8J4Q2ZB5N6C7D8E9'] }),
      type,
      createdAt: { ...Timestamp, description: 'When the change was committed.' },
      data,
    },
    closed,
  )

export const ListingEvent = eventOfKind(
  Type.Enum(ListingEventTypes, { description: 'A change of one of your listings.' }),
  ref(ListingView, { description: 'The listing right after the change; `data.version` orders one listing’s events.' }),
)
named('ListingEvent', ListingEvent)

export const ReservationEvent = eventOfKind(
  Type.Enum(ReservationEventTypes, { description: 'A change of a reservation: one on your listings, or one you made.' }),
  ref(ReservationView, { description: 'The reservation right after the change; `data.version` orders one reservation’s events.' }),
)
named('ReservationEvent', ReservationEvent)

/** Told apart by `type`: a listing's event or a reservation's. */
export const Event = Type.Union([ref(ListingEvent), ref(ReservationEvent)])
named('Event', Event)
export type Event = Static<typeof Event>

export const exampleEvent: Event = {
  id: 'evt_01M7YQ1WE0XK8J4Q2ZB5N6C7D8E9',
  type: 'listing.updated',
  createdAt: exampleListingView.updatedAt,
  data: exampleListingView,
}

export const EventsQuery = Type.Object(
  {
    after: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description:
          'The id of the last event you have: the feed continues after it. Absent: from the oldest event kept ' +
          '(EVENT_RETENTION_DAYS, 30 by default). An id that is not one of your events (or no longer kept) is `400`.',
        examples: [exampleEvent.id],
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Events per page, 1 to 100.', examples: [20] })),
  },
  closed,
)
export type EventsParams = Static<typeof EventsQuery> & { limit: number }

export const EventsPage = Type.Object(
  {
    data: Type.Array(ref(Event), { description: 'Oldest first, in the order the changes were committed.' }),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: 'The last event’s id, to pass as `after` for what comes next; null when `data` is empty (poll again later with the same `after`).',
    }),
  },
  closed,
)
named('EventsPage', EventsPage)
