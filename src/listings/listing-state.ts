import type { Selectable } from 'kysely'
import type { ProblemDetail } from '../errors.js'
import type { ListingsTable } from '../db/tables.js'
import type { ItemColumns, ListingRecord } from './columns.js'
import type { ListingStatuses } from './schemas.js'

/* A listing as stored, in the database's names: what changes read and write, and what an event keeps as its snapshot. */

export type ListingStatus = (typeof ListingStatuses)[number]

/** The listing row's columns a ListingState is read from (items from items_record). */
export const STATE_COLUMN_NAMES = [
  'id',
  'provider_id',
  'reference_id',
  'version',
  'created_at_ms',
  'updated_at_ms',
  'expires_at_unix',
  'withdrawn_at_ms',
  'expiry_recorded',
  'type',
  'discount_rate',
  'is_assigned_to_driver',
  'latitude',
  'longitude',
  'brand_name_ar',
  'brand_name_en',
  'brand_url_safe_name',
  'brand_image_url',
  'items_record',
] as const satisfies ReadonlyArray<keyof ListingsTable>

/** withdrawn_at_ms is set once, by the withdrawal; expiry_recorded is 1 once the expiry's version bump and event are written. */
export type StateRow = Pick<Selectable<ListingsTable>, (typeof STATE_COLUMN_NAMES)[number]>

export type ListingState = Omit<StateRow, 'items_record'> & { items: ItemColumns[] }

/**
 * The state of a row that may hold other columns too (they are left out). Named column by column: an object rest
 * over a row of twenty columns cost several times as much, on every write that reads its listing.
 */
export function stateFromRow(row: StateRow): ListingState {
  // BIGINT columns come back as numbers on both drivers (better-sqlite3 without safeIntegers).
  return {
    id: row.id,
    provider_id: row.provider_id,
    reference_id: row.reference_id,
    version: row.version,
    created_at_ms: row.created_at_ms,
    updated_at_ms: row.updated_at_ms,
    expires_at_unix: row.expires_at_unix,
    withdrawn_at_ms: row.withdrawn_at_ms,
    expiry_recorded: row.expiry_recorded,
    type: row.type,
    discount_rate: row.discount_rate,
    is_assigned_to_driver: row.is_assigned_to_driver,
    latitude: row.latitude,
    longitude: row.longitude,
    brand_name_ar: row.brand_name_ar,
    brand_name_en: row.brand_name_en,
    brand_url_safe_name: row.brand_url_safe_name,
    brand_image_url: row.brand_image_url,
    items: JSON.parse(row.items_record) as ItemColumns[],
  }
}

/** A listing as its create stores it: the request's record, and what the writer decided (id, times). */
export function newListingState(record: ListingRecord, stored: { id: string; createdAtMs: number; expiresAtUnix: number }): ListingState {
  return {
    ...record,
    id: stored.id,
    version: 1,
    created_at_ms: stored.createdAtMs,
    updated_at_ms: stored.createdAtMs,
    expires_at_unix: stored.expiresAtUnix,
    withdrawn_at_ms: null,
    expiry_recorded: 0,
  }
}

/** Whether every item is gone: kept in listings.sold_out for pages and discovery, which read no items. */
export function isSoldOut(items: readonly Pick<ItemColumns, 'quantity'>[]): boolean {
  return items.every((item) => item.quantity === 0)
}

/** Each item's units not yet sold, by position. */
export const quantitiesOf = (state: Pick<ListingState, 'items'>) => state.items.map((item) => item.quantity)

/** Entries (of a PATCH or a hold, by their index) whose position names no item; positions given twice are refused with the body. */
export function unknownPositions(entries: ReadonlyArray<{ position: number }>, itemCount: number): ProblemDetail[] {
  return entries.flatMap(({ position }, k) =>
    position < itemCount
      ? []
      : [{ pointer: `/items/${k}/position`, detail: `no item has this position: the listing has ${itemCount} (positions 0 to ${itemCount - 1})` }],
  )
}

/** What decides a status: `withdrawn` wins over `expired`, which wins over `sold_out`, which wins over `active`. */
export interface StatusFacts {
  withdrawn: boolean
  expiresAtUnix: number
  soldOut: boolean
}

export function statusOf({ withdrawn, expiresAtUnix, soldOut }: StatusFacts, nowMs: number): ListingStatus {
  if (withdrawn) return 'withdrawn'
  if (nowMs >= expiresAtUnix * 1000) return 'expired'
  return soldOut ? 'sold_out' : 'active'
}

/**
 * An expiry is a change (version + 1, updated at the moment of expiry) from the moment it happens: readers, ETags
 * included, see the same before and after the sweeper records it, which only makes it durable and sends its event.
 */
export function statusAndVersion(facts: StatusFacts & { version: number; expiryRecorded: boolean }, nowMs: number): { status: ListingStatus; version: number } {
  const status = statusOf(facts, nowMs)
  return { status, version: status === 'expired' && !facts.expiryRecorded ? facts.version + 1 : facts.version }
}

/** statusAndVersion() of a stored listing, and when it last changed. */
export function effective(state: ListingState, nowMs: number): { status: ListingStatus; version: number; updatedAtMs: number } {
  const facts = { withdrawn: state.withdrawn_at_ms !== null, expiresAtUnix: state.expires_at_unix, soldOut: isSoldOut(state.items) }
  const { status, version } = statusAndVersion({ ...facts, version: state.version, expiryRecorded: state.expiry_recorded === 1 }, nowMs)
  return { status, version, updatedAtMs: version > state.version ? state.expires_at_unix * 1000 : state.updated_at_ms }
}
