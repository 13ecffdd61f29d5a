import { cellOf } from '../discovery/cells.js'
import { unitVector } from '../discovery/sphere.js'
import { requestHash } from './request-hash.js'
import type { CreateListingInput, Listing } from './schemas.js'

/* Shared with the benchmark's seeder, so seeded rows are the rows the service writes. */

/** A listing row's columns that come from the request: not id, seq, times or request_hash. */
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
  }
}

/** A listing's items as stored (listings.items_record), in the order sent. */
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
 * The text a create's fingerprint is taken over: fields in a fixed order whatever the request's key order, holding
 * every field of the validated body (a price's thousandths are exact). `items_json`, a dropped column, stays so stored fingerprints match.
 */
export function listingRecordJson(providerId: string, input: CreateListingInput): string {
  const listedItems: Array<Listing['items'][number]> = input.items.map(({ displayName, price, quantity, category }) => ({
    nameAr: displayName.ar,
    nameEn: displayName.en,
    price,
    quantity,
    category,
  }))
  return JSON.stringify({ ...listingColumns(providerId, input), items_json: JSON.stringify(listedItems), items: itemColumns(input) })
}

/** A create's rows, as far as the request decides them. */
export interface PreparedListing {
  providerId: string
  columns: ListingColumns
  items: ItemColumns[]
  requestHash: string
  /** Discovery's indexes are on it; listings never move. */
  cell: number
}

/**
 * A create's rows and fingerprint, made together from one provider and body: the provider whose counter the
 * create bumps is always the one the rows belong to.
 */
export function prepareListing(providerId: string, input: CreateListingInput): PreparedListing {
  const { latitude, longitude } = input.location
  return {
    providerId,
    columns: listingColumns(providerId, input),
    items: itemColumns(input),
    requestHash: requestHash(listingRecordJson(providerId, input)),
    cell: cellOf(unitVector(latitude, longitude)),
  }
}

/** Prices are kept as integer thousandths: the API accepts at most three decimals, so this is exact. */
export const toThousandths = (price: number) => Math.round(price * 1000)
export const fromThousandths = (thousandths: number) => thousandths / 1000
