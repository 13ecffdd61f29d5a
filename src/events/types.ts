/** Webhook masks store a bit per type by its place here: append, never reorder. */
export const EventTypes = [
  'listing.created',
  'listing.updated',
  'listing.withdrawn',
  'listing.expired',
  'reservation.held',
  'reservation.confirmed',
  'reservation.released',
  'reservation.expired',
  'reservation.cancelled',
] as const
export type EventType = (typeof EventTypes)[number]

export type ListingEventType = Extract<EventType, `listing.${string}`>
export type ReservationEventType = Extract<EventType, `reservation.${string}`>

export const ListingEventTypes = EventTypes.filter((type): type is ListingEventType => type.startsWith('listing.'))
export const ReservationEventTypes = EventTypes.filter((type): type is ReservationEventType => type.startsWith('reservation.'))

/** A listing event's snapshot is a ListingState, shown through listingView; any other's is its data as stored. */
export const isListingEvent = (type: EventType): type is ListingEventType => type.startsWith('listing.')
