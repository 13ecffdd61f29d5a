import { useEffect, useState } from 'preact/hooks'
import { api, type ListingsPage, type Problem } from '../api'
import { navigate } from '../router'
import { Heading, Link, TimeLeft, useLocale } from '../ui'

const PAGE_SIZE = 10

/** The provider's listings, newest first, a page at a time as the API pages them. */
export function Listings({ page }: { page: number }) {
  const { t, language } = useLocale()
  const [data, setData] = useState<ListingsPage | undefined>()
  const [failed, setFailed] = useState<string | undefined>()
  useEffect(() => {
    let live = true
    setData(undefined)
    void api.GET('/api/v1/listing', { params: { query: { page, limit: PAGE_SIZE } } }).then(({ data, error }) => {
      if (!live) return
      if (data) setData(data)
      // Not always a problem: a proxy's own error page arrives as text.
      else setFailed((error as Partial<Problem>).detail ?? 'error')
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
                <bdi class="reference">{listing.referenceId}</bdi>
                <span class="brand-name">
                  <bdi>{language === 'ar' ? listing.brand.nameAr : listing.brand.nameEn}</bdi>
                </span>
              </Link>
              <span class={`status status-${listing.status}`}>{t[`status_${listing.status}`]}</span>
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
