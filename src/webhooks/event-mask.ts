import { EventTypes, type EventType } from '../events/types.js'

/*
 * Which event types an endpoint receives, as one bit per type (webhook_endpoints.event_mask): the statement that
 * fans an event out to its endpoints tests `event_mask & <the type's bit>` in SQL, on both databases, with no
 * JSON to parse per endpoint. Loaded by the SQLite writer thread: no Kysely.
 */

/** The bit of an event type: its place in EventTypes. */
export const eventBit = (type: EventType): number => 1 << EventTypes.indexOf(type)

export const maskOf = (types: readonly EventType[]): number => types.reduce((mask, type) => mask | eventBit(type), 0)

export const typesOf = (mask: number): EventType[] => EventTypes.filter((type) => (mask & eventBit(type)) !== 0)

/** An endpoint created without `events` receives every type. */
export const ALL_EVENTS = maskOf(EventTypes)
