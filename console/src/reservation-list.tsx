import { useState } from 'preact/hooks'
import { api, type Problem, type Reservation } from './api'
import type { Language } from './i18n'
import { useBrandNames } from './listing-names'
import { ConfirmDialog, formatTime, Link, TimeLeft, useLocale } from './ui'

/** What a reservation holds: "2 × Croissant, 1 × Bread". */
function reservedItems(reservation: Reservation, language: Language) {
  return reservation.items.map((item, index) => (
    <span key={item.position}>
      {index > 0 && (language === 'ar' ? '، ' : ', ')}
      {item.quantity} × <bdi>{language === 'ar' ? item.nameAr : item.nameEn}</bdi>
    </span>
  ))
}

const unixOf = (iso: string) => Math.floor(Date.parse(iso) / 1000)

interface RowProps {
  reservation: Reservation
  /** The listing's brand name, per language; absent on the listing's own screen. */
  listing?: { name: string | undefined }
  busy: boolean
  failed: string | undefined
  onCancel: () => void
  onEnded: () => void
}

function ReservationRow({ reservation, listing, busy, failed, onCancel, onEnded }: RowProps) {
  const { t, language } = useLocale()
  const whose = `rsv-${reservation.id}`
  return (
    <li class="card reservation-row">
      <span class="reservation-who" id={whose}>
        <span class="marketplace">
          <span class="visually-hidden">{t.madeBy}: </span>
          <bdi>{reservation.marketplace.name}</bdi>
        </span>{' '}
        <bdi class="reference">{reservation.referenceId}</bdi>
      </span>
      <span class={`status status-rsv-${reservation.status}`}>{t[`rsv_${reservation.status}`]}</span>
      {listing && (
        <Link href={`/console/listings/${encodeURIComponent(reservation.listingId)}`} class="reservation-listing">
          <bdi>{listing.name ?? reservation.listingId}</bdi>
        </Link>
      )}
      <span class="reserved">{reservedItems(reservation, language)}</span>
      {reservation.status === 'held' ? (
        <TimeLeft expiresAtUnix={unixOf(reservation.expiresAt)} onEnded={onEnded} />
      ) : (
        <span class="when">
          {reservation.status === 'confirmed'
            ? t.madeAt(formatTime(reservation.createdAt, language))
            : t.endedAt(formatTime(reservation.status === 'expired' ? reservation.expiresAt : reservation.updatedAt, language))}
        </span>
      )}
      {reservation.status === 'confirmed' && (
        <button type="button" class="danger" disabled={busy} aria-describedby={whose} onClick={onCancel}>
          {t.cancelReservation}
        </button>
      )}
      {failed && (
        <p class="alert" role="alert">
          {t.requestFailed} <bdi>{failed}</bdi>
        </p>
      )}
    </li>
  )
}

interface ListProps {
  reservations: Reservation[]
  /** Each row links to its listing, by brand name (the Reservations screen); not on a listing's own screen. */
  showListing: boolean
  /** A reservation changed: cancelled here, or read again once its hold ran out. */
  onChanged: (reservation: Reservation) => void
}

/** Reservations, one row each; a confirmed one can be cancelled after a confirmation. */
export function ReservationList({ reservations, showListing, onChanged }: ListProps) {
  const { t, language } = useLocale()
  const brands = useBrandNames(showListing ? reservations.map((reservation) => reservation.listingId) : [])
  const [asking, setAsking] = useState<Reservation | undefined>()
  const [busy, setBusy] = useState<string | undefined>()
  const [failed, setFailed] = useState<Record<string, string>>({})

  const cancel = async (reservation: Reservation) => {
    setAsking(undefined)
    setBusy(reservation.id)
    const { data, error } = await api.POST('/api/v1/reservations/{reservationId}/cancel', { params: { path: { reservationId: reservation.id } } })
    setBusy(undefined)
    setFailed(({ [reservation.id]: _, ...others }) => (data ? others : { ...others, [reservation.id]: (error as Partial<Problem>).detail ?? t.v_other }))
    if (data) onChanged(data)
  }

  /** A hold that ran out reads `expired` now: the row asks again rather than guessing. */
  const reread = (reservation: Reservation) => {
    void api.GET('/api/v1/reservations/{reservationId}', { params: { path: { reservationId: reservation.id } } }).then(({ data }) => {
      if (data && data.status !== reservation.status) onChanged(data)
    })
  }

  return (
    <>
      <ul class="reservations">
        {reservations.map((reservation) => {
          const brand = brands[reservation.listingId]
          return (
            <ReservationRow
              key={reservation.id}
              reservation={reservation}
              listing={showListing ? { name: brand && (language === 'ar' ? brand.ar : brand.en) } : undefined}
              busy={busy === reservation.id}
              failed={failed[reservation.id]}
              onCancel={() => setAsking(reservation)}
              onEnded={() => reread(reservation)}
            />
          )
        })}
      </ul>
      <ConfirmDialog
        open={asking !== undefined}
        question={asking ? t.cancelReservationQuestion(asking.referenceId, asking.marketplace.name) : ''}
        confirm={t.cancelReservation}
        dismiss={t.keepIt}
        onConfirm={() => asking && void cancel(asking)}
        onCancel={() => setAsking(undefined)}
      />
    </>
  )
}
