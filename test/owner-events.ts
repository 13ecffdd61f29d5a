import { randomUUID } from 'node:crypto'
import type { Database } from '../src/db/connection.js'
import type { Owner } from '../src/events/owner.js'
export { providerOwner } from '../src/events/owner.js'
import { recordEvents, type NewEvent } from '../src/events/record.js'
import type { ReservationEventType } from '../src/events/types.js'

// Events of a marketplace's stream, recorded as a reservation's change will record them (its transaction's last
// statement, recordEvents), until the reservation routes exist to make them.

/** A reservation as read (the API's shape), as a reservation event's data carries it. */
export function reservationData(marketplace: { id: string; name: string }, providerId: string, overrides: Record<string, unknown> = {}) {
  return {
    id: `rsv_${randomUUID().replaceAll('-', '')}`,
    status: 'held',
    version: 1,
    referenceId: `basket-${randomUUID()}`,
    listingId: '01KAZ6QY8V6N3DW2C1XJ4T5R7M',
    providerId,
    marketplace,
    items: [{ position: 0, quantity: 2, price: 7.5, nameAr: 'كرواسون', nameEn: 'Croissant' }],
    discountRate: 0.4,
    createdAt: '2026-11-27T18:00:00.000Z',
    updatedAt: '2026-11-27T18:00:00.000Z',
    expiresAt: '2026-11-27T18:10:00.000Z',
    endedBy: null,
    ...overrides,
  }
}

export const reservationEvent = (type: ReservationEventType, data: { listingId: string; [key: string]: unknown }): NewEvent => ({
  type,
  listingId: data.listingId,
  snapshot: data,
})

/** `events` committed to `owner`'s stream by a write transaction of their own. */
export const recordFor = (database: Database, owner: Owner, nowMs: number, events: readonly NewEvent[]) => database.transact(recordEvents, owner, nowMs, events)

export const marketplaceOwner = (id: string): Owner => ({ kind: 'marketplace', id })
