import { statusOf } from './listing-state.js'
import type { Listing } from './schemas.js'

/** A listing as a page reads it: its items already JSON (listings.items_json). */
export interface PageListing {
  id: string
  referenceId: string
  expiresAtUnix: number
  withdrawn: boolean
  soldOut: boolean
  brandNameAr: string
  brandNameEn: string
  itemsJson: string
}

type ListedItem = Listing['items'][number]

/**
 * The JSON of a listing's items as GET /api/v1/listing returns them: written once, when the listing is stored,
 * and spliced into every page after. Keys in the order of the Listing schema.
 */
export function itemsJson(items: readonly ListedItem[]): string {
  return JSON.stringify(
    items.map(({ nameAr, nameEn, price, quantity, category }) => ({ nameAr, nameEn, price, quantity, category })),
  )
}

/**
 * The body of GET /api/v1/listing, written as text: the stored items JSON goes in as it is instead of being
 * parsed and serialised again on every read. The ListingsPage schema still describes it (and the OpenAPI
 * document); tests validate real pages against that schema. Every string goes through JSON.stringify.
 */
export function pageJson(recordCount: number, listings: readonly PageListing[], industry: string, nowMs: number): string {
  const industryJson = JSON.stringify(industry)
  let out = '{"content":['
  for (let i = 0; i < listings.length; i++) {
    const listing = listings[i] as PageListing
    const status: Listing['status'] = statusOf(listing, nowMs)
    if (i > 0) out += ','
    out +=
      `{"id":${JSON.stringify(listing.id)},"status":"${status}","referenceId":${JSON.stringify(listing.referenceId)},` +
      `"expiresAtUnix":${listing.expiresAtUnix},"items":${listing.itemsJson},` +
      `"brand":{"nameAr":${JSON.stringify(listing.brandNameAr)},"nameEn":${JSON.stringify(listing.brandNameEn)},"industry":${industryJson}}}`
  }
  return `${out}],"recordCount":${recordCount}}`
}
