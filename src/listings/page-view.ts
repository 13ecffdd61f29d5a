import { createHash } from 'node:crypto'
import { fromThousandths, type ItemColumns } from './columns.js'
import { statusAndVersion } from './listing-state.js'
import type { ListingsPage } from './schemas.js'

/** A listing as the page query reads it: its row's columns and its items as the page shows them. */
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
  items: ListingsPage['content'][number]['items']
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

export function pageView(page: ListingsPageData, industry: string, nowMs: number): ListingsPage {
  return {
    content: page.listings.map((listing) => ({
      id: listing.id,
      status: statusAndVersion(listing, nowMs).status,
      referenceId: listing.referenceId,
      expiresAtUnix: listing.expiresAtUnix,
      items: listing.items,
      brand: { nameAr: listing.brandNameAr, nameEn: listing.brandNameEn, industry },
    })),
    recordCount: page.recordCount,
  }
}

export function pageItems(itemsRecord: string): PageListing['items'] {
  return (JSON.parse(itemsRecord) as ItemColumns[]).map((item) => ({
    nameAr: item.name_ar,
    nameEn: item.name_en,
    price: fromThousandths(item.price_thousandths),
    quantity: item.quantity,
    category: item.category,
  }))
}
