import { render } from 'preact'
import { useEffect, useMemo, useState } from 'preact/hooks'
import { currentSession, onSessionEnded, signOut, type SessionInfo } from './api'
import { applyLanguage, initialLanguage, messages, type Language } from './i18n'
import { navigate, useRoute } from './router'
import { Activity } from './screens/activity'
import { ListingScreen } from './screens/listing'
import { Listings } from './screens/listings'
import { NewListing } from './screens/new-listing'
import { Reservations } from './screens/reservations'
import { SignIn } from './screens/sign-in'
import { openLink, SignInLink, type OpenedLink } from './screens/sign-in-link'
import { Webhooks } from './screens/webhooks'
import { LocaleContext } from './ui'
import './style.css'

type Session = { state: 'checking' } | { state: 'out'; notice?: 'refused' | 'ended' } | { state: 'in'; info: SessionInfo } | { state: 'link'; link: OpenedLink }

/** A sign-in link carries its code in the fragment (src/console/sign-in-link.ts): read once, then removed. */
function takeLinkCode(): string | undefined {
  if (location.pathname.replace(/\/+$/, '') !== '/console/link' || location.hash.length < 2) return undefined
  const code = location.hash.slice(1)
  history.replaceState(null, '', '/console')
  return code
}

function App() {
  const [language, setLanguage] = useState<Language>(initialLanguage)
  const [session, setSession] = useState<Session>({ state: 'checking' })
  const route = useRoute()
  const locale = useMemo(() => ({ language, t: messages[language] }), [language])
  const t = locale.t

  useEffect(() => applyLanguage(language, false), [])
  useEffect(() => {
    const code = takeLinkCode()
    const opening: Promise<Session> =
      code === undefined
        ? currentSession().then((info) => (info ? { state: 'in', info } : { state: 'out' }))
        : openLink(code).then((link) => (link ? { state: 'link', link } : { state: 'out', notice: 'refused' }))
    opening.then(setSession, () => setSession({ state: 'out' }))
    return onSessionEnded(() => setSession({ state: 'out', notice: 'ended' }))
  }, [])

  const switchLanguage = () => {
    const next = language === 'en' ? 'ar' : 'en'
    applyLanguage(next, true)
    setLanguage(next)
  }
  const languageButton = (
    <button type="button" class="language" lang={language === 'en' ? 'ar' : 'en'} onClick={switchLanguage}>
      {t.switchLanguage}
    </button>
  )

  let screen
  if (session.state === 'checking') {
    screen = <p class="loading">{t.loading}</p>
  } else if (session.state === 'link') {
    screen = (
      <SignInLink
        link={session.link}
        onSignedIn={(info) => setSession({ state: 'in', info })}
        onRefused={() => setSession({ state: 'out', notice: 'refused' })}
        onStay={(info) => setSession({ state: 'in', info })}
      />
    )
  } else if (session.state === 'out') {
    screen = (
      <SignIn
        notice={session.notice}
        onSignedIn={(info) => {
          if (route.path === '/console/link') navigate('/console', true)
          setSession({ state: 'in', info })
        }}
      />
    )
  } else {
    const path = route.path
    const listingId = /^\/console\/listings\/([^/]+)$/.exec(path)?.[1]
    screen =
      path === '/console/new' ? (
        <NewListing providerName={session.info.provider.name} />
      ) : listingId !== undefined ? (
        <ListingScreen key={listingId} listingId={decodeURIComponent(listingId)} />
      ) : path === '/console/reservations' ? (
        <Reservations query={route.query} />
      ) : path === '/console/activity' ? (
        <Activity />
      ) : path === '/console/webhooks' ? (
        <Webhooks />
      ) : (
        <Listings page={Math.max(1, Number(route.query.get('page')) || 1)} />
      )
  }

  const current = (path: string) => (route.path === path ? 'page' : undefined)
  return (
    <LocaleContext.Provider value={locale}>
      <header class="top">
        <span class="brand">{t.consoleTitle}</span>
        {session.state === 'in' && (
          <span class="who">
            <bdi>{session.info.provider.name}</bdi>
          </span>
        )}
        <span class="tools">
          {languageButton}
          {session.state === 'in' && (
            <button
              type="button"
              onClick={() =>
                void signOut().then(() => {
                  setSession({ state: 'out' })
                  navigate('/console')
                })
              }
            >
              {t.signOut}
            </button>
          )}
        </span>
      </header>
      {session.state === 'in' && (
        <nav class="nav" aria-label={t.mainNav}>
          <a href="/console" aria-current={current('/console')} onClick={followNav}>
            {t.listings}
          </a>
          <a href="/console/new" aria-current={current('/console/new')} onClick={followNav}>
            {t.newListing}
          </a>
          <a href="/console/reservations" aria-current={current('/console/reservations')} onClick={followNav}>
            {t.reservations}
          </a>
          <a href="/console/activity" aria-current={current('/console/activity')} onClick={followNav}>
            {t.activity}
          </a>
          <a href="/console/webhooks" aria-current={current('/console/webhooks')} onClick={followNav}>
            {t.webhooks}
          </a>
        </nav>
      )}
      <main id="main">{screen}</main>
    </LocaleContext.Provider>
  )
}

function followNav(event: MouseEvent) {
  const anchor = event.currentTarget as HTMLAnchorElement
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
  event.preventDefault()
  navigate(anchor.getAttribute('href') ?? '/console')
}

render(<App />, document.getElementById('app') as HTMLElement)
