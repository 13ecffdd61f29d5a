import { createHash } from 'node:crypto'
import { fromThousandths, type ItemColumns } from './columns.js'
import { statusAndVersion, type ListingStatus } from './listing-state.js'
import type { Representations } from './representations.js'
import type { ListingsPage } from './schemas.js'

/** A listing as the page query reads it: its row's columns. */
export interface PageListing {
  id: string
  referenceId: string
  expiresAtUnix: number
  withdrawn: boolean
  soldOut: boolean
  version: number
  expiryRecorded: boolean
  brandNameAr: string
  brandNameEn: string
  /** The items as stored (listings.items_record): read only for an entry not kept already. */
  itemsRecord: string
}

/** The provider's listing count and one page of its listings, newest first. */
export interface ListingsPageData {
  recordCount: number
  listings: PageListing[]
}

/**
 * The page's entity tag, without writing the body. A body is its count, the industry and each listing's id, status and
 * items (the rest never changes), and every change of items or status is a new version, so the count, industry and each
 * listing's id, version and status at `nowMs` name it. Weak: one tag serves every Content-Encoding, which RFC 9110
 * allows of a weak validator only; If-None-Match compares weakly, so a 304 works for every encoding.
 */
export function pageEntityTag(page: ListingsPageData, industry: string, nowMs: number): string {
  let named = `${page.recordCount} ${JSON.stringify(industry)}`
  for (const listing of page.listings) {
    const { status, version } = statusAndVersion(listing, nowMs)
    named += ` ${listing.id}.${version}.${status}`
  }
  return `W/"${createHash('sha256').update(named).digest('base64url').slice(0, 27)}"`
}

/**
 * The page as the ListingsPage schema describes it, around each listing's entry at its version as of now
 * (statusAndVersion), kept by (id, version) with the listing's other form (Representations): an entry read again is
 * copied, not made again (docs/design/0023-page-entries-by-version.md).
 */
export function pageJson(page: ListingsPageData, industry: string, nowMs: number, kept: Representations): string {
  const entries = page.listings.map((listing) => {
    const { status, version } = statusAndVersion(listing, nowMs)
    return kept.pageEntry(listing.id, version, () => pageEntry(listing, status, industry))
  })
  return `{"content":[${entries.join(',')}],"recordCount":${page.recordCount}}`
}

/** A listing as its provider's pages show it: the keys in the Listing schema's order. */
function pageEntry(listing: PageListing, status: ListingStatus, industry: string): ListingsPage['content'][number] {
  return {
    id: listing.id,
    status,
    referenceId: listing.referenceId,
    expiresAtUnix: listing.expiresAtUnix,
    items: pageItems(listing.itemsRecord),
    brand: { nameAr: listing.brandNameAr, nameEn: listing.brandNameEn, industry },
  }
}

function pageItems(itemsRecord: string): ListingsPage['content'][number]['items'] {
  return (JSON.parse(itemsRecord) as ItemColumns[]).map((item) => ({
    nameAr: item.name_ar,
    nameEn: item.name_en,
    price: fromThousandths(item.price_thousandths),
    quantity: item.quantity,
    category: item.category,
  }))
}
