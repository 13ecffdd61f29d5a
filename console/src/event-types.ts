import { ListingEventTypes, ReservationEventTypes, type EventType } from '../../src/events/types'
import type { Messages } from './i18n'

/**
 * The event types the webhook form offers, in the groups it shows them in (each a fieldset with this legend): the
 * server's own lists, so a type added to either family there is offered here, and its words must exist.
 */
export const EVENT_GROUPS = [
  { legend: 'listings', types: ListingEventTypes },
  { legend: 'reservations', types: ReservationEventTypes },
] as const satisfies ReadonlyArray<{ legend: keyof Messages; types: readonly EventType[] }>

/** Every type the form offers, in the API's order. */
export const OFFERED_EVENT_TYPES: readonly EventType[] = EVENT_GROUPS.flatMap((group) => group.types)

type Underscored<T extends string> = T extends `${infer Family}.${infer Name}` ? `${Family}_${Name}` : T
/** `event_listing_created`, …: one key for every type of the API. */
type EventKey = `event_${Underscored<EventType>}`

/**
 * An event type's words. One label a type, the same in the webhook form's checkboxes, an endpoint's summary, its
 * deliveries log and Activity, so what a seller ticks is what the log and the feed say. No label contains another
 * (case ignored) in either language, because checkboxes are found by a part of their name. A type this console
 * does not know (a newer server) is shown as the API names it. `t` must have words for every type the API has:
 * a missing key is a compile error at each call.
 */
export function eventTypeText(t: Messages & Record<EventKey, string>, type: string): string {
  const words = (t as Record<string, unknown>)[`event_${type.replace('.', '_')}`]
  return typeof words === 'string' ? words : type
}
