/** Webhook masks store a bit per type by its place here: append, never reorder. */
export const EventTypes = ['listing.created', 'listing.updated', 'listing.withdrawn', 'listing.expired'] as const
export type EventType = (typeof EventTypes)[number]
