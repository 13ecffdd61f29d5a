import type { Listing } from './schemas.js'

type ListedItem = Listing['items'][number]

/**
 * A listing's items as JSON in a page's shape, for listings.items_json, which the create and change scripts still
 * write. Pages no longer read it (they read items_record); this goes with the column.
 */
export function itemsJson(items: readonly ListedItem[]): string {
  return JSON.stringify(
    items.map(({ nameAr, nameEn, price, quantity, category }) => ({ nameAr, nameEn, price, quantity, category })),
  )
}
