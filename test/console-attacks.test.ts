import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { openDatabase } from '../src/db/connection.js'
import {
  browserAvailable,
  DESKTOP,
  launchBrowser,
  PHONE,
  seriousViolations,
  shown,
  signInWithToken,
  startConsoleService,
  watchedPage,
  type ConsoleService,
} from './console-browser.js'

// Issue 35 in a real browser, with the attacker's page on another origin of the same host (another port of
// 127.0.0.1, which shares the victim's cookies: browsers do not separate them by port). A sign-in link sent by
// someone else signs no one in until its button is pressed; a session cookie tossed in beside the victim's, or
// over it, never makes the victim's console act for the attacker.

/**
 * The attacker's site: a page that sends the browser to a URL, and pages that set a cookie for the host, from a
 * script or (able to replace an HttpOnly cookie, which a script cannot) from its Set-Cookie header.
 */
interface AttackerSite {
  origin: string
  navigate(url: string): string
  toss(cookie: string, via: 'script' | 'header'): string
  close(): Promise<void>
}

async function startAttackerSite(): Promise<AttackerSite> {
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://attacker')
    const script =
      url.pathname === '/navigate'
        ? `location = ${JSON.stringify(url.searchParams.get('to'))}`
        : url.pathname === '/toss'
          ? `${url.searchParams.get('via') === 'script' ? `document.cookie = ${JSON.stringify(url.searchParams.get('cookie'))};` : ''} document.title = 'tossed'`
          : ''
    const setCookie = url.pathname === '/toss' && url.searchParams.get('via') === 'header' ? url.searchParams.get('cookie') : null
    response.writeHead(script ? 200 : 404, { 'content-type': 'text/html; charset=utf-8', ...(setCookie === null ? {} : { 'set-cookie': setCookie }) })
    response.end(`<!doctype html><title>Free recipes</title><script>${script.replace(/</g, '\\u003c')}</script>`)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return {
    origin,
    navigate: (url) => `${origin}/navigate?to=${encodeURIComponent(url)}`,
    toss: (cookie, via) => `${origin}/toss?via=${via}&cookie=${encodeURIComponent(cookie)}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

const WORDS = {
  en: {
    linkTitle: 'Sign in with a link',
    signInAs: (name: string) => `Sign in as ${name}`,
    stayAs: (name: string) => `Stay signed in as ${name}`,
    listings: 'Listings',
    token: 'API token',
    signIn: 'Sign in',
    ended: 'session has ended',
  },
  ar: {
    linkTitle: 'الدخول برابط',
    signInAs: (name: string) => `دخول باسم ${name}`,
    stayAs: (name: string) => `البقاء باسم ${name}`,
    listings: 'العروض',
    token: 'رمز الواجهة',
    signIn: 'دخول',
    ended: 'انتهت جلستك',
  },
}

type Language = keyof typeof WORDS

if (browserAvailable()) {
  describe('the console against another site of the same host', { timeout: 600_000 }, () => {
    let service: ConsoleService
    let browser: Browser
    let attacker: AttackerSite
    const contexts: BrowserContext[] = []

    before(async () => {
      ;[service, browser, attacker] = await Promise.all([startConsoleService(), launchBrowser(), startAttackerSite()])
    })
    after(async () => {
      await browser?.close()
      await attacker?.close()
      await service?.close()
    })

    async function newContext(language: Language = 'en'): Promise<BrowserContext> {
      const context = await browser.newContext({ viewport: DESKTOP, locale: language === 'ar' ? 'ar-SA' : 'en-US' })
      contexts.push(context)
      return context
    }

    /** Who the browser's cookie signs in as now, asked by the console's own route with the browser's cookies. */
    async function signedInAs(context: BrowserContext): Promise<string | undefined> {
      const answer = await context.request.get(`${service.baseUrl}/console/session`, { headers: { 'x-console-session': '1' } })
      return answer.ok() ? ((await answer.json()) as { provider: { name: string } }).provider.name : undefined
    }

    async function linkOwnerStatus(url: string): Promise<number> {
      const code = url.split('#')[1] ?? ''
      const answer = await fetch(`${service.baseUrl}/console/link-owner`, {
        method: 'POST',
        headers: { 'x-console-session': '1', 'content-type': 'application/json' },
        body: JSON.stringify({ link: code }),
      })
      return answer.status
    }

    async function signInIn(page: Page, language: Language, token: string): Promise<void> {
      const words = WORDS[language]
      await page.goto(`${service.baseUrl}/console`)
      await page.getByLabel(words.token).fill(token)
      await page.getByRole('button', { name: words.signIn, exact: true }).click()
      await page.getByRole('heading', { level: 1, name: words.listings, exact: true }).waitFor()
    }

    async function axeClean(page: Page, where: string): Promise<void> {
      for (const viewport of [PHONE, DESKTOP]) {
        await page.setViewportSize(viewport)
        const violations = await seriousViolations(page)
        assert.deepEqual(violations, [], `${where} at ${viewport.width} px: ${JSON.stringify(violations, null, 2)}`)
        const width = await page.evaluate<number>('document.documentElement.scrollWidth')
        assert.ok(width <= viewport.width, `${where}: ${width} px wide in ${viewport.width}`)
      }
      await page.setViewportSize(DESKTOP)
    }

    for (const language of ['en', 'ar'] as Language[]) {
      test(`login CSRF: another site sending a signed-in seller to its sign-in link signs no one in; only the button does (${language})`, async () => {
        const words = WORDS[language]
        const victim = await service.newProvider(`Victim Bakery ${language}`)
        const thief = await service.newProvider(`Attacker Bakery ${language}`)
        await service.createListing(thief.token, { referenceId: `attacker-${language}` })
        const { url } = await service.consoleLink(thief.id)

        const context = await newContext(language)
        const watched = await watchedPage(context)
        const { page, problems } = watched
        await signInIn(page, language, victim.token)
        await page.goto(attacker.navigate(url))
        await shown(watched, page.getByRole('heading', { level: 1, name: words.linkTitle }))
        const button = page.getByRole('button', { name: words.signInAs(`Attacker Bakery ${language}`), exact: true })
        await button.waitFor()
        assert.match(await page.locator('main').innerText(), new RegExp(`Victim Bakery ${language}`), 'says whose session is open')
        assert.equal(new URL(page.url()).origin, service.baseUrl)
        assert.equal(new URL(page.url()).hash, '', 'the code left the address bar')
        assert.equal(await signedInAs(context), `Victim Bakery ${language}`, 'still the victim')
        assert.equal(await linkOwnerStatus(url), 200, 'the link is not spent')
        await axeClean(page, `sign-in link, with a session (${language})`)

        // Staying keeps the victim's session, and its listings.
        await page.getByRole('button', { name: words.stayAs(`Victim Bakery ${language}`), exact: true }).click()
        await page.getByRole('heading', { level: 1, name: words.listings, exact: true }).waitFor()
        assert.equal(await page.getByText(`attacker-${language}`).count(), 0)
        assert.equal(await signedInAs(context), `Victim Bakery ${language}`)

        // A click, and only a click, replaces the session.
        await page.goto(attacker.navigate(url))
        await button.click()
        await page.getByRole('heading', { level: 1, name: words.listings, exact: true }).waitFor()
        await page.getByText(`attacker-${language}`).waitFor()
        assert.match(await page.locator('header').innerText(), new RegExp(`Attacker Bakery ${language}`))
        assert.equal(await signedInAs(context), `Attacker Bakery ${language}`)
        assert.equal(await linkOwnerStatus(url), 401, 'spent by the click')
        assert.deepEqual(problems, [])
      })
    }

    test('a link scanner that runs the page spends nothing; the seller’s own click still signs in; a spent link: the sign-in page and an alert', async () => {
      const provider = await service.newProvider('Scanned Bakery')
      const { url } = await service.consoleLink(provider.id)
      const scanner = await watchedPage(await newContext())
      await scanner.page.goto(url)
      await shown(scanner, scanner.page.getByRole('button', { name: 'Sign in as Scanned Bakery', exact: true }))
      assert.equal(await scanner.page.getByText('You are signed in now as').count(), 0, 'no session to replace')
      await axeClean(scanner.page, 'sign-in link, no session (en)')
      assert.equal(await signedInAs(scanner.page.context()), undefined)
      assert.equal(await linkOwnerStatus(url), 200)

      const arabic = await watchedPage(await newContext('ar'))
      await arabic.page.goto(url)
      await shown(arabic, arabic.page.getByRole('button', { name: 'دخول باسم Scanned Bakery', exact: true }))
      await axeClean(arabic.page, 'sign-in link, no session (ar)')

      const seller = await watchedPage(await newContext())
      await seller.page.goto(url)
      await seller.page.getByRole('button', { name: 'Sign in as Scanned Bakery', exact: true }).click()
      await seller.page.getByRole('heading', { level: 1, name: 'Listings', exact: true }).waitFor()

      await scanner.page.reload()
      await scanner.page.goto(url)
      await scanner.page.getByRole('alert').waitFor()
      await scanner.page.getByLabel('API token').waitFor()
      assert.deepEqual([...scanner.problems, ...arabic.problems, ...seller.problems], [])
    })

    test('webhook URLs are shown isolated (<bdi>), a stored bidirectional control as its percent-encoding', async () => {
      const provider = await service.newProvider('Hooked Bakery')
      const created = await fetch(`${service.baseUrl}/api/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${provider.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: 'https://pos.example.com/hook?x' }),
      })
      const { id } = (await created.json()) as { id: string }
      // Stored before the API refused such URLs: written to the database directly.
      const database = openDatabase(service.databaseUrl)
      try {
        await database.writer.updateTable('webhook_endpoints').set({ url: 'https://pos.example.com/hook?\u202Emoc.knab' }).where('id', '=', id).execute()
      } finally {
        await database.close()
      }
      const watched = await watchedPage(await newContext())
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.getByRole('link', { name: 'Webhooks', exact: true }).click()
      const url = page.locator('.webhook .url bdi')
      await shown(watched, url)
      assert.equal(await url.innerText(), 'https://pos.example.com/hook?%E2%80%AEmoc.knab')
      assert.equal(await url.getAttribute('dir'), 'ltr')
      await page.getByRole('button', { name: 'Delete', exact: true }).click()
      assert.match(await page.getByRole('dialog').innerText(), /\u2068https:\/\/pos\.example\.com\/hook\?%E2%80%AEmoc\.knab\u2069/)
      assert.deepEqual(problems, [])
    })

    /** A session of `token`'s provider, as the attacker gets one for itself: its cookie's value. */
    async function sessionOf(token: string): Promise<string> {
      const answer = await fetch(`${service.baseUrl}/console/session`, {
        method: 'POST',
        headers: { 'x-console-session': '1', 'content-type': 'application/json' },
        body: JSON.stringify({ token }),
      })
      const value = /^console_session=([^;]+)/.exec(answer.headers.get('set-cookie') ?? '')?.[1]
      assert.ok(value, 'the attacker signed in')
      return value
    }

    const tossedCases = [
      { what: "the attacker's own session under path=/api/v1/", value: (s: string) => s, path: '/api/v1/', via: 'script' },
      { what: 'a bogus value under path=/api/v1/', value: () => 'bogus', path: '/api/v1/', via: 'script' },
      { what: "the attacker's own session over the victim's (path=/, HttpOnly)", value: (s: string) => s, path: '/', via: 'header' },
    ] as const

    for (const [index, tossed] of tossedCases.entries()) {
      test(`cookie tossing, ${tossed.what}: the victim's console never acts for the attacker, and signing in again works`, async () => {
        const victim = await service.newProvider(`Tossed Victim ${index}`)
        const thief = await service.newProvider(`Tossing Attacker ${index}`)
        await service.createListing(thief.token, { referenceId: `tossed-${index}` })
        await service.createListing(victim.token, { referenceId: `victim-${index}` })
        const context = await newContext()
        const watched = await watchedPage(context)
        const { page } = watched
        await signInWithToken(page, service.baseUrl, victim.token)
        await page.getByText(`victim-${index}`).waitFor()

        // Another tab on the attacker's port sets the cookie; the victim goes on using its console.
        const value = tossed.value(await sessionOf(thief.token))
        const httpOnly = tossed.via === 'header' ? '; HttpOnly; SameSite=Strict' : ''
        const other = await context.newPage()
        await other.goto(attacker.toss(`console_session=${value}; Path=${tossed.path}${httpOnly}`, tossed.via))
        await other.waitForFunction(() => document.title === 'tossed')
        await other.close()
        const sent = await context.cookies(`${service.baseUrl}/api/v1/listing`)
        assert.ok(
          sent.some((cookie) => cookie.value === value),
          `the browser took the tossed cookie: ${JSON.stringify(sent)}`,
        )

        await page.getByRole('link', { name: 'Activity', exact: true }).click()
        await shown(watched, page.getByRole('alert').filter({ hasText: WORDS.en.ended }))
        await page.getByLabel('API token').waitFor()
        assert.equal(await page.getByText(`tossed-${index}`).count(), 0, 'the attacker’s listings were never shown')
        assert.doesNotMatch(await page.locator('header').innerText(), /Tossing Attacker/)

        await page.getByLabel('API token').fill(victim.token)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()
        await shown(watched, page.getByText(`victim-${index}`))
        assert.equal(await page.getByText(`tossed-${index}`).count(), 0)
        const left = (await context.cookies(`${service.baseUrl}/api/v1/listing`)).filter((cookie) => cookie.name === 'console_session')
        assert.equal(left.length, 1, `one session cookie left: ${JSON.stringify(left)}`)
        assert.equal(left[0]?.path, '/')
        assert.equal(await signedInAs(context), `Tossed Victim ${index}`)
      })
    }
  })
}
