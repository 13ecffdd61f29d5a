import { cellOf } from '../discovery/cells.js'
import { unitVector } from '../discovery/sphere.js'
import { itemsJson } from './page-json.js'
import { requestHash } from './request-hash.js'
import type { CreateListingInput } from './schemas.js'
import type { JsonColumnType } from '../db/script.js'
import type { PreparedListing } from './listing-write.js'

/*
 * How a create request becomes rows: one source for the create script (create-script.ts) and for bench/seed.ts,
 * so seeded rows are the rows the service writes.
 */

/**
 * The columns of a listing row that come from the request; id, seq and times come from the counter, and
 * request_hash from listingRecordJson's text.
 */
export function listingColumns(providerId: string, input: CreateListingInput) {
  return {
    provider_id: providerId,
    reference_id: input.referenceId,
    type: input.listingDetails.type,
    discount_rate: input.listingDetails.discountRate,
    is_assigned_to_driver: input.listingDetails.isAssignedToDriver ? 1 : 0,
    latitude: input.location.latitude,
    longitude: input.location.longitude,
    brand_name_ar: input.brand.displayName.ar,
    brand_name_en: input.brand.displayName.en,
    brand_url_safe_name: input.brand.urlSafeName,
    brand_image_url: input.brand.imageUrl,
    // The input price is what a page returns: at most 3 decimals, so it equals fromThousandths(stored).
    items_json: itemsJson(
      input.items.map(({ displayName, price, quantity, category }) => ({ nameAr: displayName.ar, nameEn: displayName.en, price, quantity, category })),
    ),
  }
}

/** A listing's item rows, in the order sent, without listing_id. */
export function itemColumns(input: CreateListingInput) {
  return input.items.map((item, position) => ({
    position,
    name_ar: item.displayName.ar,
    name_en: item.displayName.en,
    url_safe_name: item.urlSafeName,
    image_url: item.imageUrl ?? null,
    category: item.category,
    sub_category: item.subCategory,
    price_thousandths: toThousandths(item.price),
    quantity: item.quantity,
  }))
}

export type ListingColumns = ReturnType<typeof listingColumns>
export type ItemColumns = ReturnType<typeof itemColumns>[number]
export type ListingRecord = ListingColumns & { items: ItemColumns[] }

/**
 * A create as the writers receive it: the request-side columns of the listing and of its items, as one JSON
 * text, written once. Its fields come in a fixed order whatever the order of the request's keys, and they hold
 * every field of the validated body (a price's thousandths are exact: at most 3 decimals), so the request's
 * fingerprint is taken over this same text (request-hash.ts). Being text, it goes into the PostgreSQL
 * statement as it is and crosses to the SQLite writer thread as one string, not as 100 objects to clone.
 * (Before, a create built one canonical JSON for the fingerprint and another for the statement: on a 100-item
 * body that was 4 times the work.)
 */
export function listingRecordJson(providerId: string, input: CreateListingInput): string {
  const record: ListingRecord = { ...listingColumns(providerId, input), items: itemColumns(input) }
  return JSON.stringify(record)
}

/**
 * A create's record and fingerprint, made together from one provider and body: the provider whose counter a
 * writer bumps is always the one the record's rows belong to. The cell is not in the record: the record is what
 * the fingerprint and the `listing.created` event are made of, and the cell is the index's, not the listing's.
 */
export function prepareListing(providerId: string, input: CreateListingInput): PreparedListing {
  const record = listingRecordJson(providerId, input)
  const { latitude, longitude } = input.location
  return { providerId, record, requestHash: requestHash(record), cell: cellOf(unitVector(latitude, longitude)) }
}

// The create statements are prepared once, so they name their columns up front. `satisfies` makes the
// compiler hold these lists to exactly the keys listingColumns and itemColumns return.

/** Listing columns with their PostgreSQL types, to read a batch of listings from one jsonb parameter. */
export const LISTING_COLUMN_TYPES = {
  provider_id: 'text',
  reference_id: 'text',
  type: 'text',
  discount_rate: 'double precision',
  is_assigned_to_driver: 'integer',
  latitude: 'double precision',
  longitude: 'double precision',
  brand_name_ar: 'text',
  brand_name_en: 'text',
  brand_url_safe_name: 'text',
  brand_image_url: 'text',
  items_json: 'text',
} satisfies Record<keyof ListingColumns, string>

export const LISTING_COLUMN_NAMES = Object.keys(LISTING_COLUMN_TYPES) as Array<keyof ListingColumns>

/** Item columns with their PostgreSQL types, to read the items back from a jsonb value. */
export const ITEM_COLUMN_TYPES = {
  position: 'integer',
  name_ar: 'text',
  name_en: 'text',
  url_safe_name: 'text',
  image_url: 'text',
  category: 'text',
  sub_category: 'text',
  price_thousandths: 'bigint',
  quantity: 'integer',
} as const satisfies Record<keyof ItemColumns, JsonColumnType>

/** Prices are kept as integer thousandths: the API accepts at most three decimals, so this is exact. */
export const toThousandths = (price: number) => Math.round(price * 1000)
export const fromThousandths = (thousandths: number) => thousandths / 1000
