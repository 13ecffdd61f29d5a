import { useEffect, useState } from 'preact/hooks'
import { api } from './api'

export interface BrandName {
  ar: string
  en: string
}

/**
 * A reservation names its listing by id only; the brand a row shows is read from the listing, once per page
 * load (a brand name never changes after create, so nothing here goes stale).
 */
const known = new Map<string, Promise<BrandName | undefined>>()

function brandOf(listingId: string): Promise<BrandName | undefined> {
  let found = known.get(listingId)
  if (!found) {
    found = api
      .GET('/api/v1/listing/{listingId}', { params: { path: { listingId } } })
      .then(({ data }) => data && { ar: data.brand.nameAr, en: data.brand.nameEn })
    // A failure is not remembered: the next screen asks again.
    void found.then((brand) => brand ?? known.delete(listingId))
    known.set(listingId, found)
  }
  return found
}

/** The brand names of these listings, as they arrive. */
export function useBrandNames(listingIds: readonly string[]): Record<string, BrandName> {
  const [names, setNames] = useState<Record<string, BrandName>>({})
  const key = [...new Set(listingIds)].sort().join(' ')
  useEffect(() => {
    let live = true
    for (const id of key.split(' ').filter(Boolean)) {
      void brandOf(id).then((brand) => {
        if (live && brand) setNames((before) => (before[id] ? before : { ...before, [id]: brand }))
      })
    }
    return () => {
      live = false
    }
  }, [key])
  return names
}
