import type { Selectable } from 'kysely'
import type { ReservationsTable } from '../db/tables.js'
import { fromThousandths } from '../listings/columns.js'
import type { ReservationStatus, ReservationView } from './schemas.js'
import type { Line } from './stock.js'

/** A reservation's line as stored: what was held, at the price and names of the moment. */
export interface ReservedLine extends Line {
  price_thousandths: number
  name_ar: string
  name_en: string
}

export type ReservationRow = Selectable<ReservationsTable> & { marketplace_name: string }

export const linesOf = (row: Pick<ReservationRow, 'items_record'>) => JSON.parse(row.items_record) as ReservedLine[]

/**
 * A held reservation is expired from the instant its expiry comes, in every read, as a listing's is: version + 1,
 * changed at that instant. The sweeper only makes it durable and sends its event.
 */
export function effectiveReservation(row: Pick<ReservationRow, 'status' | 'version' | 'expires_at_ms' | 'updated_at_ms'>, nowMs: number) {
  if (row.status === 'held' && nowMs >= row.expires_at_ms)
    return { status: 'expired' as ReservationStatus, version: row.version + 1, updatedAtMs: row.expires_at_ms }
  return { status: row.status, version: row.version, updatedAtMs: row.updated_at_ms }
}

/** The one place a reservation as read is made; keys in the schema's order. */
export function reservationView(row: ReservationRow, nowMs: number): ReservationView {
  const { status, version, updatedAtMs } = effectiveReservation(row, nowMs)
  return {
    id: row.id,
    status,
    version,
    referenceId: row.reference_id,
    listingId: row.listing_id,
    providerId: row.provider_id,
    marketplace: { id: row.marketplace_id, name: row.marketplace_name },
    items: linesOf(row).map((line) => ({
      position: line.position,
      quantity: line.quantity,
      price: fromThousandths(line.price_thousandths),
      nameAr: line.name_ar,
      nameEn: line.name_en,
    })),
    discountRate: row.discount_rate,
    createdAt: new Date(row.created_at_ms).toISOString(),
    updatedAt: new Date(updatedAtMs).toISOString(),
    expiresAt: new Date(row.expires_at_ms).toISOString(),
    endedBy: row.ended_by,
  }
}

export const reservationEtag = (version: number) => `"${version}"`
