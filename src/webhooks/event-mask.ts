import { EventTypes, type EventType } from '../events/types.js'

/*
 * A bit per event type, so the fan-out tests `event_mask & <bit>` in SQL on both databases, with no JSON to parse
 * per endpoint. Loaded by the SQLite writer thread: no Kysely.
 */

export const eventBit = (type: EventType): number => 1 << EventTypes.indexOf(type)

export const maskOf = (types: readonly EventType[]): number => types.reduce((mask, type) => mask | eventBit(type), 0)

export const typesOf = (mask: number): EventType[] => EventTypes.filter((type) => (mask & eventBit(type)) !== 0)

/** An endpoint created without `events` receives every type, also those added later: every bit. */
export const ALL_EVENTS = -1
