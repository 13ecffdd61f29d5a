import { useEffect, useState } from 'preact/hooks'
import { api, type FeedEvent, type Problem, type Reservation } from '../api'
import { eventTypeText } from '../event-types'
import type { Language } from '../i18n'
import { formatTime, Heading, Link, useLocale } from '../ui'

/** What an event is about: the listing (reference and brand), or the reservation (its marketplace and reference). */
function Subject({ event, language }: { event: FeedEvent; language: Language }) {
  if (event.type.startsWith('listing.')) {
    const listing = event.data as Extract<FeedEvent, { type: `listing.${string}` }>['data']
    return (
      <Link href={`/console/listings/${encodeURIComponent(listing.id)}`}>
        <bdi>{listing.referenceId}</bdi> · <bdi>{language === 'ar' ? listing.brand.nameAr : listing.brand.nameEn}</bdi>
      </Link>
    )
  }
  // A reservation's event carries the reservation as the reservation routes answer with it.
  const reservation = event.data as Partial<Reservation>
  const words = (
    <>
      <bdi class="marketplace">{reservation.marketplace?.name ?? ''}</bdi> · <bdi>{reservation.referenceId ?? event.data.id}</bdi>
    </>
  )
  return typeof reservation.listingId === 'string' ? (
    <Link href={`/console/listings/${encodeURIComponent(reservation.listingId)}`}>{words}</Link>
  ) : (
    <span>{words}</span>
  )
}

/** The feed is read oldest first, a page at a time; the console follows it to its end and shows the newest first. */
const PAGE = 100
const MAX_PAGES = 20

export function Activity() {
  const { t, language } = useLocale()
  const [events, setEvents] = useState<FeedEvent[] | undefined>()
  const [failed, setFailed] = useState<string | undefined>()
  useEffect(() => {
    let live = true
    void (async () => {
      const all: FeedEvent[] = []
      let after: string | undefined
      for (let page = 0; page < MAX_PAGES; page++) {
        const { data, error } = await api.GET('/api/v1/events', { params: { query: after === undefined ? { limit: PAGE } : { after, limit: PAGE } } })
        if (!data) {
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the effect's cleanup clears `live` during the await.
          if (live) setFailed((error as Partial<Problem>).detail ?? t.v_other)
          return
        }
        all.push(...data.data)
        if (data.data.length < PAGE || data.nextCursor === null) break
        after = data.nextCursor
      }
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the effect's cleanup clears `live` during the await.
      if (live) setEvents(all.reverse())
    })()
    return () => {
      live = false
    }
  }, [])
  return (
    <section>
      <Heading>{t.activity}</Heading>
      {failed && (
        <p class="alert" role="alert">
          {failed}
        </p>
      )}
      {!events && !failed && <p class="loading">{t.loading}</p>}
      {events && events.length === 0 && <p>{t.noEvents}</p>}
      {events && events.length > 0 && (
        <ol class="events">
          {events.map((event) => (
            <li key={event.id} class="card event">
              <span class={`event-type event-${event.type.replace('.', '-')}`}>{eventTypeText(t, event.type)}</span>
              <Subject event={event} language={language} />
              <time dateTime={event.createdAt}>{formatTime(event.createdAt, language)}</time>
            </li>
          ))}
        </ol>
      )}
    </section>
  )
}
