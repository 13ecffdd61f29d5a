import { useEffect, useState } from 'preact/hooks'
import { api, type ListingsPage, type ListingSummary, type Problem } from '../api'
import { percentOf } from '../form-values'
import type { Language, Messages } from '../i18n'
import { navigate } from '../router'
import { Heading, Link, TimeLeft, useLocale } from '../ui'

const PAGE_SIZE = 10
/** Item names a card shows before "+N more". */
const NAMES_SHOWN = 2

/** What a listing sells, as its card says it: the first items' names, then how many more. */
function WhatIsSold({ listing }: { listing: ListingSummary }) {
  const { t, language } = useLocale()
  const names = listing.items.slice(0, NAMES_SHOWN).map((item) => (language === 'ar' ? item.nameAr : item.nameEn))
  const more = listing.items.length - names.length
  return (
    <span class="what">
      {names.map((name, index) => (
        <span key={index}>
          {index > 0 && (language === 'ar' ? '، ' : ', ')}
          <bdi>{name}</bdi>
        </span>
      ))}
      {more > 0 && ` ${t.andMore(more)}`}
    </span>
  )
}

/** The items' prices: one price, or the lowest to the highest. */
function priceText(listing: ListingSummary, language: Language): string {
  const format = new Intl.NumberFormat(language === 'ar' ? 'ar-u-nu-latn' : 'en', { maximumFractionDigits: 3 })
  const prices = listing.items.map((item) => item.price)
  const low = Math.min(...prices)
  const high = Math.max(...prices)
  return low === high ? format.format(low) : `${format.format(low)}–${format.format(high)}`
}

function offerText(t: Messages, language: Language, listing: ListingSummary, discountRate: number | undefined): string {
  const parts = [t.itemCount(listing.items.length), `${t.price}: ${priceText(listing, language)}`]
  if (discountRate !== undefined) parts.push(t.percentOff(percentOf(discountRate)))
  return parts.join(' · ')
}

/** The provider's listings, newest first, a page at a time as the API pages them. */
export function Listings({ page }: { page: number }) {
  const { t, language } = useLocale()
  const [data, setData] = useState<ListingsPage | undefined>()
  const [failed, setFailed] = useState<string | undefined>()
  /** Each listing's discount, which a page of listings does not carry: read from each listing, as it arrives. */
  const [discounts, setDiscounts] = useState<Record<string, number>>({})
  useEffect(() => {
    let live = true
    setData(undefined)
    void api.GET('/api/v1/listing', { params: { query: { page, limit: PAGE_SIZE } } }).then(({ data, error }) => {
      if (!live) return
      if (!data) {
        // Not always a problem: a proxy's own error page arrives as text.
        setFailed((error as Partial<Problem>).detail ?? 'error')
        return
      }
      setData(data)
      for (const listing of data.content) {
        void api.GET('/api/v1/listing/{listingId}', { params: { path: { listingId: listing.id } } }).then(({ data: view }) => {
          if (live && view) setDiscounts((known) => ({ ...known, [view.id]: view.listingDetails.discountRate }))
        })
      }
    })
    return () => {
      live = false
    }
  }, [page])

  const pages = data ? Math.max(1, Math.ceil(data.recordCount / PAGE_SIZE)) : 1
  const go = (to: number) => navigate(to === 1 ? '/console' : `/console?page=${to}`)
  return (
    <section>
      <Heading>{t.listings}</Heading>
      {failed && (
        <p class="alert" role="alert">
          {failed}
        </p>
      )}
      {!data && !failed && <p class="loading">{t.loading}</p>}
      {data && data.content.length === 0 && <p>{t.noListings}</p>}
      {data && data.content.length > 0 && (
        <ul class="listings">
          {data.content.map((listing) => (
            <li key={listing.id} class="card listing-row">
              <Link href={`/console/listings/${encodeURIComponent(listing.id)}`} class="listing-link">
                <WhatIsSold listing={listing} />
                <span class="brand-name">
                  <bdi>{language === 'ar' ? listing.brand.nameAr : listing.brand.nameEn}</bdi>
                </span>
                <bdi class="reference">{listing.referenceId}</bdi>
              </Link>
              <span class={`status status-${listing.status}`}>{t[`status_${listing.status}`]}</span>
              <p class="offer">{offerText(t, language, listing, discounts[listing.id])}</p>
              {listing.status === 'active' || listing.status === 'sold_out' ? <TimeLeft expiresAtUnix={listing.expiresAtUnix} /> : null}
            </li>
          ))}
        </ul>
      )}
      {data && (
        <nav class="pager" aria-label={t.pageOf(page, pages)}>
          {page > 1 && (
            <button type="button" onClick={() => go(page - 1)}>
              {t.previousPage}
            </button>
          )}
          <span>{t.pageOf(page, pages)}</span>
          {page < pages && (
            <button type="button" onClick={() => go(page + 1)}>
              {t.nextPage}
            </button>
          )}
        </nav>
      )}
    </section>
  )
}
