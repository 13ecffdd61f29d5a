import { fromThousandths } from './columns.js'
import { effective, type ListingState } from './listing-state.js'
import type { ListingTypes, ListingView } from './schemas.js'

/**
 * The one place a ListingView is made; keys come in the schema's order. `nowMs` decides the status: an event passes
 * its own time, so its data is the listing as it was right then.
 */
export function listingView(state: ListingState, industry: string, nowMs: number): ListingView {
  const { status, version, updatedAtMs } = effective(state, nowMs)
  return {
    id: state.id,
    status,
    referenceId: state.reference_id,
    version,
    createdAt: new Date(state.created_at_ms).toISOString(),
    updatedAt: new Date(updatedAtMs).toISOString(),
    expiresAtUnix: state.expires_at_unix,
    location: { latitude: state.latitude, longitude: state.longitude },
    brand: {
      nameAr: state.brand_name_ar,
      nameEn: state.brand_name_en,
      industry,
      urlSafeName: state.brand_url_safe_name,
      imageUrl: state.brand_image_url,
    },
    listingDetails: {
      discountRate: state.discount_rate,
      type: state.type as (typeof ListingTypes)[number],
      isAssignedToDriver: state.is_assigned_to_driver === 1,
    },
    items: state.items.map((item) => ({
      position: item.position,
      nameAr: item.name_ar,
      nameEn: item.name_en,
      price: fromThousandths(item.price_thousandths),
      quantity: item.quantity,
      category: item.category,
      subCategory: item.sub_category,
      urlSafeName: item.url_safe_name,
      ...(item.image_url === null ? {} : { imageUrl: item.image_url }),
    })),
  }
}

export const listingEtag = (view: Pick<ListingView, 'version'>) => `"${view.version}"`
