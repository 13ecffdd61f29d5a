import { useEffect, useState } from 'preact/hooks'
import patchSchema from 'schema:patch-listing'
import { api, versionOf, type ListingView, type Problem, type Reservation, type Stock } from '../api'
import { issueMessage } from '../messages-of'
import { numberOf, percentOf, rateOf } from '../form-values'
import { ReservationList } from '../reservation-list'
import { ConfirmDialog, ErrorSummary, Field, formatTime, Heading, Link, TimeLeft, useLocale } from '../ui'
import { validate } from '../validate'

interface Loaded {
  listing: ListingView
  version: number
}

/** Field values as typed, by the names the fields carry (`/items/<position>/quantity`, …). */
type Values = Record<string, string>

const DISCOUNT = '/listingDetails/discountRate'

function valuesOf(listing: ListingView): Values {
  const values: Values = { [DISCOUNT]: percentOf(listing.listingDetails.discountRate) }
  for (const item of listing.items) {
    values[`/items/${item.position}/quantity`] = String(item.quantity)
    values[`/items/${item.position}/price`] = String(item.price)
  }
  return values
}

/**
 * The PATCH body for what differs from the listing, and, for each pointer into it, the field it came from
 * (a PATCH names items by index in its own array, the fields by position).
 */
function patchOf(listing: ListingView, values: Values): { body: Record<string, unknown>; fieldOf: Record<string, string> } {
  const body: Record<string, unknown> = {}
  const fieldOf: Record<string, string> = {}
  const rate = rateOf(values[DISCOUNT] ?? '')
  if (rate !== listing.listingDetails.discountRate) {
    body.listingDetails = { discountRate: rate }
    fieldOf[DISCOUNT] = DISCOUNT
  }
  const items: Array<Record<string, unknown>> = []
  for (const item of listing.items) {
    const change: Record<string, unknown> = {}
    const quantity = numberOf(values[`/items/${item.position}/quantity`] ?? '')
    const price = numberOf(values[`/items/${item.position}/price`] ?? '')
    if (quantity !== item.quantity) change.quantity = quantity ?? ''
    if (price !== item.price) change.price = price ?? ''
    if (Object.keys(change).length === 0) continue
    const index = items.length
    items.push({ position: item.position, ...change })
    fieldOf[`/items/${index}/quantity`] = `/items/${item.position}/quantity`
    fieldOf[`/items/${index}/price`] = `/items/${item.position}/price`
  }
  if (items.length > 0) body.items = items
  return { body, fieldOf }
}

/** Reservations shown under the listing's items; the Reservations screen has them all. */
const RESERVATIONS_SHOWN = 20

/** An item's Held and Available counts, as read from the listing's stock. */
function StockCounts({ position, stock }: { position: number; stock: Stock | undefined }) {
  const { t } = useLocale()
  const counts = stock?.items.find((item) => item.position === position)
  const id = `stock-${position}`
  return (
    <div class="stock-counts">
      <span class="count">
        <label for={`${id}-held`}>{t.held}</label>
        <output id={`${id}-held`} aria-live="off" dir="ltr">
          {counts ? counts.held : '…'}
        </output>
      </span>
      <span class="count">
        <label for={`${id}-available`}>{t.available}</label>
        <output id={`${id}-available`} aria-live="off" dir="ltr">
          {counts ? counts.available : '…'}
        </output>
      </span>
    </div>
  )
}

export function ListingScreen({ listingId }: { listingId: string }) {
  const { t, language } = useLocale()
  const [loaded, setLoaded] = useState<Loaded | undefined>()
  const [missing, setMissing] = useState(false)
  const [values, setValues] = useState<Values>({})
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [notice, setNotice] = useState<'saved' | 'nothing' | 'stale' | 'closed' | { failed: string } | undefined>()
  const [busy, setBusy] = useState(false)
  const [confirming, setConfirming] = useState(false)
  const [stock, setStock] = useState<Stock | undefined>()
  const [reservations, setReservations] = useState<{ data: Reservation[]; more: boolean } | undefined>()

  const take = (listing: ListingView, response: Response) => {
    const version = versionOf(response) ?? listing.version
    setLoaded({ listing, version })
    setValues(valuesOf(listing))
    setErrors({})
  }

  /** The units held and available per item, and the reservations on the listing: read on load and after every change. */
  const loadStock = async () => {
    const [{ data: counts }, { data: page }] = await Promise.all([
      api.GET('/api/v1/listing/{listingId}/stock', { params: { path: { listingId } } }),
      api.GET('/api/v1/reservations', { params: { query: { listingId, limit: RESERVATIONS_SHOWN } } }),
    ])
    if (counts) setStock(counts)
    if (page) setReservations({ data: page.data, more: page.nextCursor !== null })
  }

  const load = async () => {
    const { data, response } = await api.GET('/api/v1/listing/{listingId}', { params: { path: { listingId } } })
    if (data) take(data, response)
    else setMissing(true)
    if (data) await loadStock()
  }
  useEffect(() => void load(), [listingId])

  if (missing) {
    return (
      <section>
        <Heading>{t.notFound}</Heading>
        <Link href="/console">{t.back}</Link>
      </section>
    )
  }
  if (!loaded) return <p class="loading">{t.loading}</p>
  const { listing, version } = loaded
  const open = listing.status === 'active' || listing.status === 'sold_out'
  const ifMatch = { 'if-match': `"${version}"` }

  const refused = (problem: Problem | undefined, fieldOf: Record<string, string> = {}) => {
    if (problem?.status === 412 || problem?.type === '/problems/listing-closed') {
      setNotice(problem.status === 412 ? 'stale' : 'closed')
      return
    }
    // Below what reservations hold: the counts beside each Quantity are read again to show what is held now.
    const belowHeld = problem?.type === '/problems/insufficient-stock'
    if (belowHeld) void loadStock()
    const found: Record<string, string> = {}
    for (const detail of problem?.errors ?? []) {
      const field = detail.pointer === undefined ? undefined : fieldOf[detail.pointer]
      // The service words it in English; the Arabic page says the same from the count it gives.
      const message = belowHeld && language === 'ar' && detail.held !== undefined ? t.belowHeld(detail.held) : detail.detail
      if (field) found[field] ??= message
    }
    setErrors(found)
    setNotice(Object.keys(found).length > 0 ? undefined : { failed: problem?.detail ?? t.v_other })
  }

  const save = async (event: Event) => {
    event.preventDefault()
    setNotice(undefined)
    const { body, fieldOf } = patchOf(listing, values)
    if (Object.keys(body).length === 0) {
      setErrors({})
      setNotice('nothing')
      return
    }
    const issues = validate(patchSchema, body)
    if (issues.length > 0) {
      const found: Record<string, string> = {}
      for (const issue of issues) {
        const field = fieldOf[issue.pointer]
        if (field) found[field] ??= field === DISCOUNT ? t.v_discount : issueMessage(t, issue)
      }
      setErrors(found)
      return
    }
    setBusy(true)
    const { data, error, response } = await api.PATCH('/api/v1/listing/{listingId}', {
      params: { path: { listingId }, header: ifMatch },
      body: body as never,
    })
    setBusy(false)
    if (data) {
      take(data, response)
      setNotice('saved')
      void loadStock()
    } else refused(error, fieldOf)
  }

  const withdraw = async () => {
    setConfirming(false)
    setBusy(true)
    const { data, error, response } = await api.POST('/api/v1/listing/{listingId}/withdraw', { params: { path: { listingId }, header: ifMatch } })
    setBusy(false)
    if (data) {
      take(data, response)
      setNotice(undefined)
      void loadStock()
    } else refused(error)
  }

  /**
   * A reservation changed under the listing. A cancelled one gave its units back: the listing has a new version
   * and quantities, read again, what was typed here and not saved kept on top of them.
   */
  const reservationChanged = async (reservation: Reservation) => {
    setReservations((shown) => shown && { ...shown, data: shown.data.map((row) => (row.id === reservation.id ? reservation : row)) })
    if (reservation.status === 'cancelled') {
      const { data, response } = await api.GET('/api/v1/listing/{listingId}', { params: { path: { listingId } } })
      if (data) {
        const typed = Object.entries(values).filter(([name, value]) => value !== valuesOf(listing)[name])
        take(data, response)
        setValues({ ...valuesOf(data), ...Object.fromEntries(typed) })
      }
    }
    await loadStock()
  }

  const entries = Object.entries(errors).map(([name, message]) => {
    const item = /^\/items\/(\d+)\/(\w+)$/.exec(name)
    const label = item
      ? `${language === 'ar' ? listing.items[Number(item[1])]?.nameAr : listing.items[Number(item[1])]?.nameEn} · ${item[2] === 'price' ? t.price : t.quantity}`
      : t.discount
    return { name, label, message }
  })

  return (
    <section>
      <Heading>
        <bdi>{language === 'ar' ? listing.brand.nameAr : listing.brand.nameEn}</bdi>
      </Heading>
      <p class="meta">
        <span class={`status status-${listing.status}`}>{t[`status_${listing.status}`]}</span>
        <span>{t.version(listing.version)}</span>
        <span>
          {t.reference}: <bdi>{listing.referenceId}</bdi>
        </span>
        {open && <TimeLeft expiresAtUnix={listing.expiresAtUnix} />}
      </p>
      {notice === 'saved' && (
        <p class="success" role="status">
          {t.saved}
        </p>
      )}
      {notice === 'nothing' && (
        <p class="hint" role="status">
          {t.nothingChanged}
        </p>
      )}
      {notice === 'stale' && (
        <div class="alert" role="alert">
          <p>{t.changedElsewhere}</p>
          <button type="button" onClick={() => void load().then(() => setNotice(undefined))}>
            {t.reload}
          </button>
        </div>
      )}
      {notice === 'closed' && (
        <div class="alert" role="alert">
          <p>{t.listingClosed}</p>
          <button type="button" onClick={() => void load().then(() => setNotice(undefined))}>
            {t.reload}
          </button>
        </div>
      )}
      {typeof notice === 'object' && (
        <p class="alert" role="alert">
          {t.requestFailed} <bdi>{notice.failed}</bdi>
        </p>
      )}
      {entries.length > 0 && <ErrorSummary title={t.fixErrors(entries.length)} entries={entries} />}

      <form noValidate onSubmit={(event) => void save(event)}>
        <div class="card">
          <h2>{t.details}</h2>
          <dl class="details">
            <dt>{t.created}</dt>
            <dd>{formatTime(listing.createdAt, language)}</dd>
            <dt>{t.expires}</dt>
            <dd>{formatTime(listing.expiresAtUnix * 1000, language)}</dd>
            <dt>{t.type}</dt>
            <dd>{listing.listingDetails.type === 'timed' ? t.type_timed : t.type_priority_timed}</dd>
            <dt>{t.deliveredByDriver}</dt>
            <dd>{listing.listingDetails.isAssignedToDriver ? t.yes : t.no}</dd>
            <dt>{t.location}</dt>
            <dd dir="ltr">
              {listing.location.latitude}, {listing.location.longitude}
            </dd>
            {!open && (
              <>
                <dt>{t.discount}</dt>
                <dd dir="ltr">{percentOf(listing.listingDetails.discountRate)} %</dd>
              </>
            )}
          </dl>
          {open && (
            <div class="narrow">
              <Field
                name={DISCOUNT}
                label={t.discount}
                value={values[DISCOUNT] ?? ''}
                hint={t.discountHint}
                dir="ltr"
                inputMode="decimal"
                error={errors[DISCOUNT]}
                onValue={(v) => setValues({ ...values, [DISCOUNT]: v })}
              />
            </div>
          )}
        </div>
        <h2>{t.items}</h2>
        <ul class="items">
          {listing.items.map((item) => {
            const quantity = `/items/${item.position}/quantity`
            const price = `/items/${item.position}/price`
            const name = language === 'ar' ? item.nameAr : item.nameEn
            return (
              <li key={item.position} class="card item" aria-label={name}>
                <h3>
                  <bdi>{name}</bdi>
                </h3>
                {open ? (
                  <div class="grid">
                    <Field
                      name={quantity}
                      label={t.quantity}
                      value={values[quantity] ?? ''}
                      dir="ltr"
                      inputMode="numeric"
                      error={errors[quantity]}
                      onValue={(v) => setValues({ ...values, [quantity]: v })}
                    />
                    <StockCounts position={item.position} stock={stock} />
                    <Field
                      name={price}
                      label={t.price}
                      value={values[price] ?? ''}
                      dir="ltr"
                      inputMode="decimal"
                      error={errors[price]}
                      onValue={(v) => setValues({ ...values, [price]: v })}
                    />
                    {Number(values[quantity]) > 0 && (
                      <div class="field">
                        <button type="button" onClick={() => setValues({ ...values, [quantity]: '0' })}>
                          {t.soldOut}
                        </button>
                      </div>
                    )}
                  </div>
                ) : (
                  <>
                    <p dir="ltr" class="values">
                      {t.quantity}: {item.quantity} · {t.price}: {item.price}
                    </p>
                    <StockCounts position={item.position} stock={stock} />
                  </>
                )}
              </li>
            )
          })}
        </ul>
        {open && (
          <div class="actions">
            <button type="submit" class="primary" disabled={busy}>
              {t.saveChanges}
            </button>
            <button type="button" class="danger" disabled={busy} onClick={() => setConfirming(true)}>
              {t.withdraw}
            </button>
          </div>
        )}
      </form>
      <h2>{t.reservations}</h2>
      {!reservations && <p class="loading">{t.loading}</p>}
      {reservations && reservations.data.length === 0 && <p>{t.noReservations}</p>}
      {reservations && reservations.data.length > 0 && (
        <ReservationList reservations={reservations.data} showListing={false} onChanged={(reservation) => void reservationChanged(reservation)} />
      )}
      {reservations?.more && (
        <p>
          <Link href={`/console/reservations?listingId=${encodeURIComponent(listingId)}`}>{t.allOfListing}</Link>
        </p>
      )}
      <ConfirmDialog
        open={confirming}
        question={t.withdrawQuestion}
        confirm={t.withdrawListing}
        onConfirm={() => void withdraw()}
        onCancel={() => setConfirming(false)}
      />
      <p>
        <Link href="/console">{t.back}</Link>
      </p>
    </section>
  )
}
