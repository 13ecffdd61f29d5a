import { useEffect, useState } from 'preact/hooks'
import { api, type Problem, type Reservation, type ReservationStatus } from '../api'
import { useBrandNames } from '../listing-names'
import { ReservationList } from '../reservation-list'
import { navigate } from '../router'
import { Heading, Link, Select, useLocale } from '../ui'

const PAGE_SIZE = 10
export const RESERVATION_STATUSES: readonly ReservationStatus[] = ['held', 'confirmed', 'released', 'expired', 'cancelled']

const isStatus = (value: string | null): value is ReservationStatus => RESERVATION_STATUSES.includes(value as ReservationStatus)

/** The screen's address for a filter: `/console/reservations?status=held&listingId=…`. */
function addressOf(status: ReservationStatus | undefined, listingId: string | undefined): string {
  const query = new URLSearchParams()
  if (status) query.set('status', status)
  if (listingId) query.set('listingId', listingId)
  const text = query.toString()
  return text ? `/console/reservations?${text}` : '/console/reservations'
}

/**
 * The reservations on the provider's listings, newest first, a page at a time as the API pages them (by cursor:
 * the cursors of the pages before are kept to go back). The filter lives in the address, so a reload keeps it.
 */
export function Reservations({ query }: { query: URLSearchParams }) {
  const { t, language } = useLocale()
  const status = isStatus(query.get('status')) ? (query.get('status') as ReservationStatus) : undefined
  const listingId = query.get('listingId') ?? undefined
  const filter = `${status ?? ''} ${listingId ?? ''}`
  /** The cursor of each page shown so far, [undefined] being the first page; a cursor is good for its filter only. */
  const [paging, setPaging] = useState<{ filter: string; cursors: Array<string | undefined> }>({ filter, cursors: [undefined] })
  const cursors = paging.filter === filter ? paging.cursors : [undefined]
  const setCursors = (next: Array<string | undefined>) => setPaging({ filter, cursors: next })
  const [page, setPage] = useState<{ data: Reservation[]; nextCursor: string | null } | undefined>()
  const [failed, setFailed] = useState<string | undefined>()
  const cursor = cursors.at(-1)

  useEffect(() => {
    let live = true
    setPage(undefined)
    setFailed(undefined)
    void api
      .GET('/api/v1/reservations', { params: { query: { status, listingId, limit: PAGE_SIZE, ...(cursor === undefined ? {} : { cursor }) } } })
      .then(({ data, error }) => {
        if (!live) return
        if (data) setPage(data)
        else setFailed((error as Partial<Problem>).detail ?? t.v_other)
      })
    return () => {
      live = false
    }
  }, [filter, cursor])

  const brands = useBrandNames(listingId ? [listingId] : [])
  const brand = listingId ? brands[listingId] : undefined
  const changed = (reservation: Reservation) =>
    setPage((shown) => shown && { ...shown, data: shown.data.map((row) => (row.id === reservation.id ? reservation : row)) })

  return (
    <section>
      <Heading>{t.reservations}</Heading>
      <div class="filters">
        <Select
          name="status"
          label={t.status}
          value={status ?? ''}
          options={[{ value: '', label: t.allStatuses }, ...RESERVATION_STATUSES.map((value) => ({ value, label: t[`rsv_${value}`] }))]}
          onValue={(value) => navigate(addressOf(isStatus(value) ? value : undefined, listingId))}
        />
        {listingId && (
          <p class="hint">
            {t.ofListing}{' '}
            <Link href={`/console/listings/${encodeURIComponent(listingId)}`}>
              <bdi>{brand ? (language === 'ar' ? brand.ar : brand.en) : listingId}</bdi>
            </Link>{' '}
            · <Link href={addressOf(status, undefined)}>{t.allReservations}</Link>
          </p>
        )}
      </div>
      {failed && (
        <p class="alert" role="alert">
          {failed}
        </p>
      )}
      {!page && !failed && <p class="loading">{t.loading}</p>}
      {page && page.data.length === 0 && <p>{status || listingId ? t.noReservationsNow : t.noReservations}</p>}
      {page && page.data.length > 0 && <ReservationList reservations={page.data} showListing onChanged={changed} />}
      {page && (cursors.length > 1 || page.nextCursor !== null) && (
        <nav class="pager" aria-label={t.pageNumber(cursors.length)}>
          {cursors.length > 1 && (
            <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>
              {t.previousPage}
            </button>
          )}
          <span>{t.pageNumber(cursors.length)}</span>
          {page.nextCursor !== null && (
            <button type="button" onClick={() => setCursors([...cursors, page.nextCursor ?? undefined])}>
              {t.nextPage}
            </button>
          )}
        </nav>
      )}
    </section>
  )
}
