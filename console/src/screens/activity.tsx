import { useEffect, useState } from 'preact/hooks'
import { api, isListingEvent, type ListingEvent, type Problem } from '../api'
import { formatTime, Heading, Link, useLocale } from '../ui'

/** The feed is read oldest first, a page at a time; the console follows it to its end and shows the newest first. */
const PAGE = 100
const MAX_PAGES = 20

export function Activity() {
  const { t, language } = useLocale()
  const [events, setEvents] = useState<ListingEvent[] | undefined>()
  const [failed, setFailed] = useState<string | undefined>()
  useEffect(() => {
    let live = true
    void (async () => {
      const all: ListingEvent[] = []
      let after: string | undefined
      for (let page = 0; page < MAX_PAGES; page++) {
        const { data, error } = await api.GET('/api/v1/events', { params: { query: after === undefined ? { limit: PAGE } : { after, limit: PAGE } } })
        if (!data) {
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- the effect's cleanup clears `live` during the await.
          if (live) setFailed((error as Partial<Problem>).detail ?? t.v_other)
          return
        }
        all.push(...data.data.filter(isListingEvent))
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
              <span class={`event-type event-${event.type.replace('.', '-')}`}>{t[`event_${event.type.replace('.', '_') as 'listing_created'}`]}</span>
              <Link href={`/console/listings/${encodeURIComponent(event.data.id)}`}>
                <bdi>{event.data.referenceId}</bdi> · <bdi>{language === 'ar' ? event.data.brand.nameAr : event.data.brand.nameEn}</bdi>
              </Link>
              <time dateTime={event.createdAt}>{formatTime(event.createdAt, language)}</time>
            </li>
          ))}
        </ol>
      )}
    </section>
  )
}
