import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import {
  browserAvailable,
  descriptionOf,
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
import { fixtureImages, item } from './fixtures.js'

// The console's part of reservations (shared/spec/CONSOLE.md, "Reservations"), in a real browser: reservations are
// made through the API with a marketplace's token, as a marketplace would, and the provider sees and cancels them
// in the console. Every name used here is part of the console's contract.

type Token = { token: string }
type Line = { position: number; quantity: number }

if (browserAvailable()) {
  describe('reservations in the console', { timeout: 600_000 }, () => {
    let service: ConsoleService
    let browser: Browser
    let market: Token & { id: string }
    const contexts: BrowserContext[] = []

    before(async () => {
      // Whichever started is closed when the other did not, or it would keep this process alive.
      const [started, launched] = await Promise.allSettled([startConsoleService(), launchBrowser()])
      if (started.status === 'rejected' || launched.status === 'rejected') {
        if (started.status === 'fulfilled') await started.value.close()
        if (launched.status === 'fulfilled') await launched.value.close()
        throw started.status === 'rejected' ? started.reason : (launched as PromiseRejectedResult).reason
      }
      service = started.value
      browser = launched.value
      market = await service.newMarketplace('Deals App')
    })
    after(async () => {
      await browser?.close()
      await service?.close()
    })

    async function newContext(viewport = DESKTOP, language: 'en' | 'ar' = 'en'): Promise<BrowserContext> {
      const context = await browser.newContext({ viewport, locale: language === 'en' ? 'en-US' : 'ar', extraHTTPHeaders: { 'accept-language': language } })
      contexts.push(context)
      return context
    }

    async function call(who: Token, method: string, path: string, body?: unknown): Promise<any> {
      const answer = await fetch(`${service.baseUrl}${path}`, {
        method,
        headers: body === undefined ? { authorization: `Bearer ${who.token}` } : { authorization: `Bearer ${who.token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await answer.text()
      if (answer.status >= 300) throw new Error(`${method} ${path} answered ${answer.status}: ${text}`)
      return JSON.parse(text)
    }

    /** A listing of the provider's with items of these quantities (named "Meal 0", "Meal 1", …) and this brand. */
    const aListing = (provider: Token, quantities: number[], brand = 'Corner Bakery', brandAr = 'مخبز الزاوية') =>
      service.createListing(provider.token, {
        brand: { displayName: { ar: brandAr, en: brand }, urlSafeName: 'corner-bakery', imageUrl: fixtureImages.url('/img/brand.png') },
        items: quantities.map((quantity, k) => item(k, { quantity })),
      })
    const hold = (listingId: string, referenceId: string, items: Line[], by: Token = market): Promise<any> =>
      call(by, 'POST', '/api/v1/reservations', { listingId, referenceId, items })
    const confirm = (id: string, by: Token = market): Promise<any> => call(by, 'POST', `/api/v1/reservations/${id}/confirm`)
    const reservationOf = (provider: Token, id: string): Promise<any> => call(provider, 'GET', `/api/v1/reservations/${id}`)
    const stockOf = (provider: Token, listingId: string): Promise<any> => call(provider, 'GET', `/api/v1/listing/${listingId}/stock`)

    const rows = (page: Page) => page.locator('.reservations > li')
    const row = (page: Page, reference: string) => rows(page).filter({ hasText: reference })

    /** Waits until the rows show these references (in any order), then asserts it. */
    async function referencesShown(page: Page, expected: string[]): Promise<void> {
      const want = [...expected].sort()
      const read = async () => (await rows(page).locator('.reference').allInnerTexts()).sort()
      for (let tries = 0; tries < 100 && JSON.stringify(await read()) !== JSON.stringify(want); tries++) await page.waitForTimeout(50)
      assert.deepEqual(await read(), want)
    }

    async function openReservations(page: Page): Promise<void> {
      await page.getByRole('link', { name: 'Reservations', exact: true }).click()
      await page.getByRole('heading', { level: 1, name: 'Reservations', exact: true }).waitFor()
    }

    test('the Reservations screen: each row with its marketplace, reference, brand, items, status and time left, newest first; the Status filter narrows it; pages', async () => {
      const provider = await service.newProvider('Paging Bakery')
      const listingId = await aListing(provider, [50, 20])
      const made: any[] = []
      for (let k = 0; k < 11; k++) {
        const lines =
          k === 10
            ? [
                { position: 0, quantity: 2 },
                { position: 1, quantity: 1 },
              ]
            : [{ position: 0, quantity: 1 }]
        made.push(await hold(listingId, `basket-${String(k).padStart(2, '0')}`, lines))
      }
      // Among the newest, which are on the first page whatever the order of two made in the same millisecond.
      await confirm(made[9].id)
      await confirm(made[7].id)
      await call(market, 'POST', `/api/v1/reservations/${made[8].id}/release`)
      // Another provider's reservation, by the same marketplace: never on this provider's screen.
      const stranger = await service.newProvider('Stranger Bakery')
      await hold(await aListing(stranger, [5]), 'basket-stranger', [{ position: 0, quantity: 1 }])

      const watched = await watchedPage(await newContext(PHONE))
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await openReservations(page)
      await shown(watched, rows(page).first())
      assert.equal(await rows(page).count(), 10)
      const api = await call(provider, 'GET', '/api/v1/reservations?limit=10')
      const references = await rows(page).locator('.reference').allInnerTexts()
      assert.deepEqual(
        references,
        api.data.map((r: any) => r.referenceId),
        'as the API pages them, newest first',
      )

      const first = row(page, 'basket-10')
      const second = row(page, 'basket-09')
      const released = row(page, 'basket-08')
      await first.waitFor()
      await first.getByRole('link', { name: 'Corner Bakery' }).waitFor()
      const text = await first.innerText()
      assert.match(text, /Deals App/)
      assert.match(text, /2 × Meal 0, 1 × Meal 1/)
      assert.match(text, /\bHeld\b/)
      assert.match(text, /\d:\d\d:\d\d left/, 'a held one shows its time left')
      assert.equal(await first.getByRole('button', { name: 'Cancel reservation' }).count(), 0, 'a held one has no cancel button')
      assert.equal(await second.locator('.status').innerText(), 'Confirmed')
      assert.equal(await second.getByRole('button', { name: 'Cancel reservation' }).count(), 1)
      assert.equal(await released.locator('.status').innerText(), 'Released')
      assert.doesNotMatch(await page.locator('main').innerText(), /basket-stranger/)

      // The time left counts down by itself.
      const timeLeft = await first.locator('.time-left').elementHandle()
      const before = await timeLeft?.textContent()
      await page.waitForFunction(([element, text]) => element?.textContent !== text, [timeLeft, before] as const, { timeout: 5000 })

      const firstPage = api.data.map((r: any) => r.referenceId)
      const secondPage = (await call(provider, 'GET', `/api/v1/reservations?limit=10&cursor=${encodeURIComponent(api.nextCursor)}`)).data.map(
        (r: any) => r.referenceId,
      )
      assert.equal(secondPage.length, 1)
      await page.getByRole('button', { name: 'Next page' }).click()
      await referencesShown(page, secondPage)
      await page.getByRole('button', { name: 'Previous page' }).click()
      await referencesShown(page, firstPage)

      await page.getByLabel('Status').selectOption({ label: 'Confirmed' })
      await page.waitForURL(/status=confirmed/)
      await referencesShown(page, ['basket-07', 'basket-09'])
      assert.deepEqual(await rows(page).locator('.status').allInnerTexts(), ['Confirmed', 'Confirmed'])
      assert.equal(await page.getByRole('button', { name: 'Next page' }).count(), 0)

      await page.getByLabel('Status').selectOption({ label: 'Released' })
      await page.waitForURL(/status=released/)
      await referencesShown(page, ['basket-08'])
      // The filter is in the address: a reload keeps it.
      await page.reload()
      await shown(watched, row(page, 'basket-08'))
      assert.equal(await page.getByLabel('Status').inputValue(), 'released')
      assert.equal(await rows(page).count(), 1)

      await page.getByLabel('Status').selectOption({ label: 'All' })
      await page.waitForURL((url) => !url.search.includes('status'))
      await referencesShown(page, firstPage)
      assert.deepEqual(problems, [])
    })

    test('cancel asks first: "Keep it" changes nothing; "Cancel reservation" cancels, the row shows Cancelled, the units are for sale again', async () => {
      const provider = await service.newProvider('Cancel Bakery')
      const listingId = await aListing(provider, [5])
      const reservation = await hold(listingId, 'order-77', [{ position: 0, quantity: 2 }])
      await confirm(reservation.id)
      assert.equal((await service.readListing(provider.token, listingId)).items[0].quantity, 3, 'confirmed: sold')

      const watched = await watchedPage(await newContext())
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await openReservations(page)
      const target = row(page, 'order-77')
      await shown(watched, target)
      assert.equal(await target.locator('.status').innerText(), 'Confirmed')

      await target.getByRole('button', { name: 'Cancel reservation' }).click()
      const dialog = page.getByRole('dialog')
      await dialog.waitFor()
      assert.match(await dialog.innerText(), /order-77/)
      await dialog.getByRole('button', { name: 'Keep it' }).click()
      await dialog.waitFor({ state: 'hidden' })
      assert.equal((await reservationOf(provider, reservation.id)).status, 'confirmed')
      assert.equal(await target.locator('.status').innerText(), 'Confirmed')

      // By keyboard this time: the row's button, then the dialog's.
      await target.getByRole('button', { name: 'Cancel reservation' }).focus()
      await page.keyboard.press('Enter')
      await dialog.waitFor()
      await dialog.getByRole('button', { name: 'Cancel reservation' }).focus()
      await page.keyboard.press('Enter')
      await target.locator('.status', { hasText: 'Cancelled' }).waitFor()
      assert.equal(await target.getByRole('button', { name: 'Cancel reservation' }).count(), 0, 'nothing left to cancel')
      const now = await reservationOf(provider, reservation.id)
      assert.equal(now.status, 'cancelled')
      assert.equal(now.endedBy, 'provider')
      assert.equal((await service.readListing(provider.token, listingId)).items[0].quantity, 5, 'the units are back')
      assert.deepEqual(problems, [])
    })

    test('a listing: Held and Available beside each Quantity, read again after each change; its reservations below; a quantity below what is held is the 409 at that field, nothing else lost', async () => {
      const provider = await service.newProvider('Stock Bakery')
      const listingId = await aListing(provider, [5, 3])
      await hold(listingId, 'held-1', [{ position: 0, quantity: 2 }])
      const sold = await hold(listingId, 'sold-1', [{ position: 1, quantity: 1 }])
      await confirm(sold.id)

      const watched = await watchedPage(await newContext(PHONE))
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.goto(`${service.baseUrl}/console/listings/${listingId}`)
      const meal0 = page.getByRole('listitem', { name: 'Meal 0' })
      const meal1 = page.getByRole('listitem', { name: 'Meal 1' })
      const counts = async (element: typeof meal0) => [await element.getByLabel('Held').innerText(), await element.getByLabel('Available').innerText()]
      await shown(watched, meal0.getByLabel('Held').getByText('2'))
      assert.deepEqual(await counts(meal0), ['2', '3'])
      assert.deepEqual(await counts(meal1), ['0', '2'])
      assert.equal(await meal1.getByLabel('Quantity').inputValue(), '2')
      await row(page, 'held-1').waitFor()
      await row(page, 'sold-1').waitFor()
      assert.match(await row(page, 'held-1').innerText(), /Deals App[\s\S]*Held[\s\S]*2 × Meal 0/)

      // Below the 2 held: the server's 409 at that Quantity; the price typed beside it stays.
      await meal0.getByLabel('Quantity').fill('1')
      await meal1.getByLabel('Price').fill('12.5')
      await page.getByRole('button', { name: 'Save changes' }).click()
      const quantity0 = meal0.getByLabel('Quantity')
      await page.waitForFunction(() => document.querySelector('[name="/items/0/quantity"]')?.getAttribute('aria-invalid') === 'true')
      assert.match(await descriptionOf(quantity0), /2 are held by reservations/)
      assert.equal(await meal1.getByLabel('Price').getAttribute('aria-invalid'), null)
      assert.equal(await quantity0.inputValue(), '1')
      assert.equal(await meal1.getByLabel('Price').inputValue(), '12.5', 'nothing typed is lost')
      await page.getByRole('alert').waitFor()
      const listing = await service.readListing(provider.token, listingId)
      assert.deepEqual([listing.items[0].quantity, listing.items[1].price], [5, 11], 'nothing was applied')

      // Meanwhile the marketplace holds one more; the next change is saved and the counts are read again.
      await hold(listingId, 'held-2', [{ position: 0, quantity: 1 }])
      await quantity0.fill('4')
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
      await meal0.getByLabel('Held').getByText('3').waitFor()
      assert.deepEqual(await counts(meal0), ['3', '1'])
      await row(page, 'held-2').waitFor()

      // Cancelling the confirmed one from here gives its unit back: quantity, counts and version follow.
      await row(page, 'sold-1').getByRole('button', { name: 'Cancel reservation' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel reservation' }).click()
      await row(page, 'sold-1').locator('.status', { hasText: 'Cancelled' }).waitFor()
      await meal1.getByLabel('Available').getByText('3').waitFor()
      assert.equal(await meal1.getByLabel('Quantity').inputValue(), '3')
      assert.deepEqual(
        (await stockOf(provider, listingId)).items.map((i: any) => [i.held, i.available]),
        [
          [3, 1],
          [0, 3],
        ],
      )
      // The form follows the new version: a change saves without a 412.
      await meal1.getByLabel('Price').fill('13')
      await page.getByRole('button', { name: 'Save changes' }).click()
      await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor()
      assert.equal((await service.readListing(provider.token, listingId)).items[1].price, 13)
      assert.deepEqual(problems, [])
    })

    test('Activity shows reservation events with their type and the marketplace’s name, beside the listing events', async () => {
      const provider = await service.newProvider('Busy Bakery')
      const listingId = await aListing(provider, [4])
      const other = await service.newMarketplace('Other App')
      const a = await hold(listingId, 'act-1', [{ position: 0, quantity: 1 }])
      await confirm(a.id)
      await call(provider, 'POST', `/api/v1/reservations/${a.id}/cancel`)
      const b = await hold(listingId, 'act-2', [{ position: 0, quantity: 1 }], other)
      await call(other, 'POST', `/api/v1/reservations/${b.id}/release`)

      const watched = await watchedPage(await newContext())
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.getByRole('link', { name: 'Activity' }).click()
      await page.getByRole('heading', { level: 1, name: 'Activity' }).waitFor()
      const events = page.locator('.events li')
      await shown(watched, events.first())
      const kinds = await events.locator('.event-type').allInnerTexts()
      // Newest first: the listing's own events (created, then updated by the confirm and the cancel) among them.
      assert.deepEqual(
        kinds.filter((kind) => kind.startsWith('Reservation')),
        ['Reservation released', 'Reservation held', 'Reservation cancelled', 'Reservation confirmed', 'Reservation held'],
      )
      assert.match(await events.filter({ hasText: 'Reservation released' }).innerText(), /Other App[\s\S]*act-2/)
      assert.match(await events.filter({ hasText: 'Reservation cancelled' }).innerText(), /Deals App[\s\S]*act-1/)
      assert.ok(kinds.includes('Created'), 'the listing events are still there')
      await events.filter({ hasText: 'Reservation confirmed' }).getByRole('link').click()
      await page.getByRole('heading', { level: 1, name: 'Corner Bakery' }).waitFor()
      assert.deepEqual(problems, [])
    })

    test('in Arabic: the names of the screen, the statuses, the dialog, the counts and the 409 message', async () => {
      const provider = await service.newProvider('Arabic Bakery')
      const listingId = await aListing(provider, [6])
      await hold(listingId, 'ar-held', [{ position: 0, quantity: 2 }])
      const c = await hold(listingId, 'ar-confirmed', [{ position: 0, quantity: 1 }])
      await confirm(c.id)

      const watched = await watchedPage(await newContext(PHONE, 'ar'))
      const { page, problems } = watched
      await page.goto(`${service.baseUrl}/console`)
      await page.getByLabel('رمز الواجهة').fill(provider.token)
      await page.getByRole('button', { name: 'دخول' }).click()
      await page.getByRole('heading', { level: 1, name: 'العروض', exact: true }).waitFor()
      await page.getByRole('link', { name: 'الحجوزات', exact: true }).click()
      await page.getByRole('heading', { level: 1, name: 'الحجوزات', exact: true }).waitFor()
      await shown(watched, row(page, 'ar-held'))
      await row(page, 'ar-held').getByRole('link', { name: 'مخبز الزاوية' }).waitFor()
      assert.equal(await row(page, 'ar-held').locator('.status').innerText(), 'محجوز')
      assert.equal(await row(page, 'ar-confirmed').locator('.status').innerText(), 'مؤكد')
      assert.match(await row(page, 'ar-held').innerText(), /وجبة 0/)
      await page.getByLabel('الحالة').selectOption({ label: 'مؤكد' })
      await page.waitForURL(/status=confirmed/)
      await row(page, 'ar-held').waitFor({ state: 'detached' })
      await row(page, 'ar-confirmed').getByRole('button', { name: 'إلغاء الحجز' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'أبقِه' }).click()
      await row(page, 'ar-confirmed').getByRole('button', { name: 'إلغاء الحجز' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'إلغاء الحجز' }).click()
      await row(page, 'ar-confirmed').locator('.status', { hasText: 'ملغى' }).waitFor()

      await page.goto(`${service.baseUrl}/console/listings/${listingId}`)
      const meal = page.getByRole('listitem', { name: 'وجبة 0' })
      await shown(watched, meal.getByLabel('المحجوز').getByText('2'))
      assert.equal(await meal.getByLabel('المتاح').innerText(), '4')
      await page.locator('[name="/items/0/quantity"]').fill('1')
      await page.getByRole('button', { name: 'حفظ' }).click()
      await page.waitForFunction(() => document.querySelector('[name="/items/0/quantity"]')?.getAttribute('aria-invalid') === 'true')
      assert.equal(await descriptionOf(page.locator('[name="/items/0/quantity"]')), 'الحجوزات تحجز 2: لا يمكن أن تقل الكمية عن ذلك')
      assert.deepEqual(problems, [])
    })

    for (const viewport of [PHONE, DESKTOP]) {
      for (const language of ['en', 'ar'] as const) {
        test(`axe finds nothing serious on the reservation screens at ${viewport.width}×${viewport.height} in ${language === 'en' ? 'English' : 'Arabic'}; nothing scrolls sideways`, async () => {
          // A marketplace's references are its own to choose once: each of these tests makes its own.
          const provider = await service.newProvider(`Accessible Bakery ${language} ${viewport.width}`)
          const listingId = await aListing(provider, [9, 4])
          await hold(listingId, `a11y-held-${language}-${viewport.width}`, [
            { position: 0, quantity: 2 },
            { position: 1, quantity: 1 },
          ])
          const c = await hold(listingId, `a11y-confirmed-${language}-${viewport.width}`, [{ position: 0, quantity: 1 }])
          await confirm(c.id)
          const r = await hold(listingId, `a11y-released-${language}-${viewport.width}`, [{ position: 1, quantity: 1 }])
          await call(market, 'POST', `/api/v1/reservations/${r.id}/release`)
          const x = await hold(listingId, `a11y-cancelled-${language}-${viewport.width}`, [{ position: 1, quantity: 1 }])
          await confirm(x.id)
          await call(provider, 'POST', `/api/v1/reservations/${x.id}/cancel`)

          const t =
            language === 'en'
              ? {
                  token: 'API token',
                  signIn: 'Sign in',
                  listings: 'Listings',
                  reservations: 'Reservations',
                  status: 'Status',
                  cancel: 'Cancel reservation',
                  save: 'Save changes',
                  activity: 'Activity',
                }
              : {
                  token: 'رمز الواجهة',
                  signIn: 'دخول',
                  listings: 'العروض',
                  reservations: 'الحجوزات',
                  status: 'الحالة',
                  cancel: 'إلغاء الحجز',
                  save: 'حفظ',
                  activity: 'النشاط',
                }
          const watched = await watchedPage(await newContext(viewport, language))
          const { page, problems } = watched
          const check = async (where: string) => {
            const violations = await seriousViolations(page)
            assert.deepEqual(violations, [], `${where} (${language}, ${viewport.width} px): ${JSON.stringify(violations, null, 2)}`)
            const width = await page.evaluate<number>('document.documentElement.scrollWidth')
            assert.ok(width <= viewport.width, `${where} (${language}, ${viewport.width} px): the page is ${width} px wide`)
          }
          await page.goto(`${service.baseUrl}/console`)
          await page.getByLabel(t.token).fill(provider.token)
          await page.getByRole('button', { name: t.signIn }).click()
          await page.getByRole('heading', { level: 1, name: t.listings, exact: true }).waitFor()

          await page.getByRole('link', { name: t.reservations, exact: true }).click()
          await shown(watched, row(page, 'a11y-cancelled'))
          await row(page, 'a11y-held').getByRole('link').waitFor()
          await check('reservations')
          await row(page, 'a11y-confirmed').getByRole('button', { name: t.cancel }).click()
          await page.getByRole('dialog').waitFor()
          await check('the cancel dialog')
          await page.keyboard.press('Escape')
          await page.getByRole('dialog').waitFor({ state: 'hidden' })
          await page.getByLabel(t.status).selectOption('held')
          await page.waitForURL(/status=held/)
          await row(page, 'a11y-confirmed').waitFor({ state: 'detached' })
          await check('reservations, filtered')

          await page.goto(`${service.baseUrl}/console/listings/${listingId}`)
          await shown(watched, row(page, 'a11y-released'))
          await page.waitForFunction(
            () => document.querySelectorAll('output').length > 0 && [...document.querySelectorAll('output')].every((o) => o.textContent !== '…'),
          )
          await check('a listing with its stock and reservations')
          await page.locator('[name="/items/0/quantity"]').fill('0')
          await page.getByRole('button', { name: t.save }).click()
          await page.waitForFunction(() => document.querySelector('[name="/items/0/quantity"]')?.getAttribute('aria-invalid') === 'true')
          await check('a listing with a quantity below what is held')

          await page.getByRole('link', { name: t.activity, exact: true }).click()
          await page.locator('.events li').first().waitFor()
          await check('activity with reservation events')
          assert.deepEqual(problems, [])
        })
      }
    }
  })
}
