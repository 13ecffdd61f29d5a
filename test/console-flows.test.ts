import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext } from 'playwright-core'
import {
  browserAvailable,
  descriptionOf,
  listingIdOf,
  DESKTOP,
  goodImage,
  launchBrowser,
  missingImage,
  notAnImage,
  PHONE,
  prefilledFromLastListing,
  seriousViolations,
  shown,
  signInWithToken,
  startConsoleService,
  startedFromProviderName,
  watchedPage,
  type ConsoleService,
} from './console-browser.js'
import { EventTypes } from '../src/events/types.js'
import { startReceiver } from './webhook-receiver.js'

// The console in a real browser, as a seller uses it (shared/spec/CONSOLE.md): every name used here is part of
// the console's contract.

const field = (pointer: string) => `[name="${pointer}"]`

/** The Webhooks screen's words in each language; `labels` are the checkboxes' names, in the API's order of types. */
const WEBHOOK_WORDS = {
  en: {
    token: 'API token',
    signIn: 'Sign in',
    webhooks: 'Webhooks',
    listingsGroup: 'Listings',
    reservationsGroup: 'Reservations',
    labels: [
      'Created',
      'Updated',
      'Withdrawn',
      'Expired',
      'Reservation held',
      'Reservation confirmed',
      'Reservation released',
      'Reservation lapsed',
      'Reservation cancelled',
    ],
    addWebhook: 'Add webhook',
    noWebhooks: 'No webhooks yet.',
    done: 'Done',
    deliveries: 'Deliveries',
  },
  ar: {
    token: 'رمز الواجهة',
    signIn: 'دخول',
    webhooks: 'الخطافات (Webhooks)',
    listingsGroup: 'العروض',
    reservationsGroup: 'الحجوزات',
    labels: ['أُنشئ', 'عُدّل', 'سُحب', 'انتهى', 'حجز جديد', 'تأكيد حجز', 'إفراج عن حجز', 'انقضاء مهلة حجز', 'إلغاء حجز'],
    addWebhook: 'أضف خطافًا',
    noWebhooks: 'لا توجد خطافات بعد.',
    done: 'تم',
    deliveries: 'التسليمات',
  },
}

if (browserAvailable()) {
  describe('the console in a browser', { timeout: 600_000 }, () => {
    let service: ConsoleService
    let browser: Browser
    const contexts: BrowserContext[] = []

    before(async () => {
      ;[service, browser] = await Promise.all([startConsoleService(), launchBrowser()])
    })
    after(async () => {
      await browser?.close()
      await service?.close()
    })

    async function newContext(viewport = DESKTOP): Promise<BrowserContext> {
      const context = await browser.newContext({ viewport, locale: 'en-US' })
      contexts.push(context)
      return context
    }

    test('sign in with a token: an HttpOnly SameSite=Strict cookie, and no token in storage, the URL or the page', async () => {
      const provider = await service.newProvider('Token Bakery')
      const context = await newContext(PHONE)
      const { page, problems } = await watchedPage(context)
      await signInWithToken(page, service.baseUrl, provider.token)
      const cookie = (await context.cookies()).find((c) => c.name === 'console_session')
      assert.ok(cookie, 'a session cookie')
      assert.equal(cookie.httpOnly, true)
      assert.equal(cookie.sameSite, 'Strict')
      assert.equal(cookie.secure, false, 'plain http here')
      const secretPart = provider.token.slice(4)
      const seen = await page.evaluate<string>(
        `JSON.stringify([location.href, Object.entries(localStorage), Object.entries(sessionStorage), document.documentElement.outerHTML, document.cookie])`,
      )
      assert.ok(!seen.includes(secretPart), 'the token is nowhere the page can reach')
      assert.equal(await page.getByLabel('API token').count(), 0)
      assert.deepEqual(problems, [])
    })

    test('a wrong, revoked or marketplace token: an alert, and the sign-in page stays', async () => {
      const revoked = await service.newProvider()
      await service.cli('token', 'revoke', revoked.tokenId)
      const marketplace = await service.cli('marketplace', 'create', '--name', 'Market')
      const context = await newContext()
      const { page, problems } = await watchedPage(context)
      await page.goto(`${service.baseUrl}/console`)
      for (const token of ['lst_wrong', revoked.token, marketplace.token]) {
        await page.getByLabel('API token').fill(token)
        await page.getByRole('button', { name: 'Sign in' }).click()
        await page.getByRole('alert').filter({ hasText: 'does not work' }).waitFor()
        assert.equal(await page.getByRole('heading', { name: 'Listings', exact: true }).count(), 0)
        assert.equal((await context.cookies()).filter((c) => c.name === 'console_session').length, 0)
      }
      assert.deepEqual(problems, [])
    })

    test('a sign-in link signs in once, by its button; a second use shows the sign-in page with an alert', async () => {
      const provider = await service.newProvider('Link Bakery')
      const { url } = await service.consoleLink(provider.id)
      assert.ok(url.startsWith(`${service.baseUrl}/console/`), url)
      const first = await watchedPage(await newContext(PHONE))
      await first.page.goto(url)
      await first.page.getByRole('button', { name: 'Sign in as Link Bakery', exact: true }).click()
      await first.page.getByRole('heading', { level: 1, name: 'Listings', exact: true }).waitFor()
      assert.equal(new URL(first.page.url()).hash, '', 'the code left the address bar')
      assert.match(await first.page.locator('header').innerText(), /Link Bakery/)

      const second = await watchedPage(await newContext())
      await second.page.goto(url)
      await second.page.getByRole('alert').waitFor()
      await second.page.getByLabel('API token').waitFor()
      assert.deepEqual([...first.problems, ...second.problems], [])
    })

    test('a listing made through the form in English with several items; a check and a 400 shown at their fields', async () => {
      const provider = await service.newProvider('Form Bakery')
      const watched = await watchedPage(await newContext())
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.getByRole('link', { name: 'New listing' }).click()
      await page.getByRole('heading', { level: 1, name: 'New listing' }).waitFor()
      const reference = await page.getByLabel('Reference').inputValue()
      assert.match(reference, /\S/, 'prefilled')
      await startedFromProviderName(page, '/brand/displayName/en', 'Form Bakery')

      await page.getByLabel('Latitude').fill('24.7136')
      await page.getByLabel('Longitude').fill('46.6753')
      await page.getByLabel('Brand name (Arabic)').fill('مخبز النموذج')
      await page.getByLabel('Brand name (English)').fill('Form Bakery Ltd')
      assert.equal(await page.getByLabel('Brand web name').inputValue(), 'form-bakery-ltd', 'suggested from the English name')
      await page.getByLabel('Brand image URL').fill(missingImage())
      await page.getByLabel('Discount').fill('40')
      await page.getByLabel('Type').selectOption('priority_timed')
      assert.equal(await page.getByLabel('Delivered by a driver').isChecked(), true)

      const fillItem = async (n: number, values: { ar: string; en: string; price: string; quantity: string }) => {
        const item = page.getByRole('group', { name: `Item ${n}`, exact: true })
        await item.getByLabel('Name (Arabic)').fill(values.ar)
        await item.getByLabel('Name (English)').fill(values.en)
        await item.getByLabel('Category', { exact: true }).selectOption('product')
        await item.getByLabel('Subcategory', { exact: true }).selectOption('main_dish')
        await item.getByLabel('Price').fill(values.price)
        await item.getByLabel('Quantity').fill(values.quantity)
      }
      await fillItem(1, { ar: 'كرواسون', en: 'Croissant', price: '0', quantity: '12' })
      await page.getByRole('button', { name: 'Add item' }).click()
      await fillItem(2, { ar: 'خبز', en: 'Bread', price: '3', quantity: '5' })
      await page.getByRole('button', { name: 'Add item' }).click()
      await fillItem(3, { ar: 'قهوة', en: 'Coffee', price: '19.99', quantity: '6' })
      await page.getByRole('group', { name: 'Item 3', exact: true }).getByLabel('Image URL').fill(notAnImage())
      await page.getByRole('button', { name: 'Remove item 2' }).click()
      assert.equal(await page.getByRole('group', { name: /^Item \d+$/ }).count(), 2)
      assert.equal(await page.getByRole('group', { name: 'Item 2', exact: true }).getByLabel('Name (English)').inputValue(), 'Coffee')

      // Checked before sending, from the API's own schema: the price is below its minimum.
      await page.getByRole('button', { name: 'Publish' }).click()
      await page.getByRole('alert').waitFor()
      assert.equal(await page.locator(field('/items/0/price')).getAttribute('aria-invalid'), 'true')
      assert.match(await descriptionOf(page.locator(field('/items/0/price'))), /must be >= 1/)
      await page.locator(field('/items/0/price')).fill('7.5')

      // The service's 400: the brand image cannot be fetched, and the second item's is not an image; each
      // problem's pointer lands on its field.
      await page.getByRole('button', { name: 'Publish' }).click()
      await page.locator(`${field('/brand/imageUrl')}[aria-invalid="true"]`).waitFor()
      assert.match(await descriptionOf(page.locator(field('/brand/imageUrl'))), /\S/)
      assert.equal(await page.locator(field('/items/1/imageUrl')).getAttribute('aria-invalid'), 'true')
      assert.match(await descriptionOf(page.locator(field('/items/1/imageUrl'))), /\S/)
      assert.equal(await page.locator(field('/items/0/price')).getAttribute('aria-invalid'), null, 'the fixed field is no longer marked')
      assert.equal(await page.getByLabel('Brand name (Arabic)').inputValue(), 'مخبز النموذج', 'nothing typed is lost')
      assert.equal(await page.getByLabel('Reference').inputValue(), reference)

      await page.getByLabel('Brand image URL').fill(goodImage())
      await page.locator(field('/items/1/imageUrl')).fill('')
      await page.getByRole('button', { name: 'Publish' }).click()
      await shown(watched, page.getByRole('heading', { level: 1, name: 'Form Bakery Ltd' }))
      await page.getByText('Version 1').waitFor()
      const id = listingIdOf(page)
      const listing = await service.readListing(provider.token, id)
      assert.equal(listing.referenceId, reference)
      assert.equal(listing.listingDetails.discountRate, 0.4)
      assert.equal(listing.listingDetails.type, 'priority_timed')
      assert.deepEqual(
        listing.items.map((item: any) => [item.nameEn, item.nameAr, item.price, item.quantity, item.urlSafeName]),
        [
          ['Croissant', 'كرواسون', 7.5, 12, 'croissant'],
          ['Coffee', 'قهوة', 19.99, 6, 'coffee'],
        ],
      )
      assert.deepEqual(problems, [])
    })

    test('in Arabic (right to left): the switch keeps what was typed; a listing made through the form', async () => {
      const provider = await service.newProvider()
      await service.createListing(provider.token)
      const watched = await watchedPage(await newContext(PHONE))
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.getByRole('link', { name: 'New listing' }).click()
      // Before typing: a prefill landing in the middle of Playwright's fill (select all, then insert) left the caret
      // after the prefilled name, and the typed one was appended to it.
      await prefilledFromLastListing(page)
      const brandImage = page.locator(field('/brand/imageUrl'))
      assert.equal(await brandImage.inputValue(), goodImage().replace('console.png', 'brand.png'), 'prefilled from the previous listing')
      await page.locator(field('/brand/displayName/en')).fill('Desert Rose Cafe')
      await page.getByRole('button', { name: 'العربية' }).click()
      await page.getByRole('heading', { level: 1, name: 'عرض جديد' }).waitFor()
      assert.equal(await page.getAttribute('html', 'lang'), 'ar')
      assert.equal(await page.getAttribute('html', 'dir'), 'rtl')
      assert.equal(await page.locator(field('/brand/displayName/en')).inputValue(), 'Desert Rose Cafe', 'kept across the switch')

      await page.locator(field('/brand/displayName/ar')).fill('مقهى وردة الصحراء')
      await page.locator(field('/listingDetails/discountRate')).fill('50')
      await page.locator(field('/items/0/displayName/ar')).fill('شاي')
      await page.locator(field('/items/0/displayName/en')).fill('Tea')
      await page.locator(field('/items/0/subCategory')).selectOption('drink')
      await page.locator(field('/items/0/price')).fill('4')
      await page.getByRole('button', { name: 'أضف صنفًا' }).click()
      await page.locator(field('/items/1/displayName/ar')).fill('كعك')
      await page.locator(field('/items/1/displayName/en')).fill('Cake')
      await page.locator(field('/items/1/price')).fill('12.25')
      await page.locator(field('/items/1/quantity')).fill('3')
      await page.getByRole('button', { name: 'نشر' }).click()
      await shown(watched, page.getByRole('heading', { level: 1, name: 'مقهى وردة الصحراء' }))
      await page.getByText('متاح', { exact: true }).first().waitFor()

      // Remembered on this browser: a reload stays in Arabic (the language alone is stored).
      await page.reload()
      await shown(watched, page.getByRole('heading', { level: 1, name: 'مقهى وردة الصحراء' }))
      assert.equal(await page.getAttribute('html', 'dir'), 'rtl')
      assert.deepEqual(await page.evaluate('Object.keys(localStorage)'), ['console.language'])
      await page.getByRole('link', { name: 'العروض' }).click()
      await page.getByRole('heading', { level: 1, name: 'العروض' }).waitFor()
      await page.getByRole('link', { name: /console-/ }).waitFor()
      assert.equal(await page.locator('.listings li').count(), 2)
      assert.deepEqual(problems, [])
    })

    test('sell out, then a 412 from a second tab offers a reload; the activity feed shows the changes', async () => {
      const provider = await service.newProvider()
      const id = await service.createListing(provider.token, {}, 2)
      const context = await newContext()
      const a = await watchedPage(context)
      await signInWithToken(a.page, service.baseUrl, provider.token)
      await a.page.goto(`${service.baseUrl}/console/listings/${id}`)
      await a.page.getByText('Version 1').waitFor()
      // Each click sets its item's quantity to 0, and that item's button goes.
      const soldOut = a.page.getByRole('button', { name: 'Sold out' })
      for (let left = 2; left > 0; left--) {
        await soldOut.first().click()
        await a.page.waitForFunction(
          (n) =>
            document.querySelectorAll('button').length >= 0 &&
            [...document.querySelectorAll('button')].filter((b) => b.textContent === 'Sold out').length === n,
          left - 1,
        )
      }
      assert.equal(await a.page.locator(field('/items/1/quantity')).inputValue(), '0')
      await a.page.getByRole('button', { name: 'Save changes' }).click()
      await a.page.getByText('Version 2').waitFor()
      await a.page.locator('.meta').getByText('Sold out', { exact: true }).waitFor()
      assert.equal((await service.readListing(provider.token, id)).status, 'sold_out')

      // A second tab changes the discount; the first, still at version 2, tries to change a price.
      const b = await watchedPage(context)
      await b.page.goto(`${service.baseUrl}/console/listings/${id}`)
      await b.page.getByLabel('Discount').fill('70')
      await b.page.getByRole('button', { name: 'Save changes' }).click()
      await b.page.getByText('Version 3').waitFor()
      await a.page.locator(field('/items/0/price')).fill('9.5')
      await a.page.getByRole('button', { name: 'Save changes' }).click()
      const alert = a.page.getByRole('alert').filter({ hasText: 'changed elsewhere' })
      await alert.waitFor()
      assert.equal(await a.page.locator(field('/items/0/price')).inputValue(), '9.5', 'what was typed is still there')
      await alert.getByRole('button', { name: 'Reload' }).click()
      await a.page.getByText('Version 3').waitFor()
      assert.equal(await a.page.getByLabel('Discount').inputValue(), '70')
      assert.equal((await service.readListing(provider.token, id)).items[0].price, 10, 'the stale change was not applied')

      await a.page.getByRole('link', { name: 'Activity' }).click()
      await a.page.getByRole('heading', { level: 1, name: 'Activity' }).waitFor()
      const events = a.page.locator('.events li')
      await events.first().waitFor()
      assert.equal(await events.count(), 3)
      assert.match(await events.first().innerText(), /Updated/)
      assert.match(await events.last().innerText(), /Created/)
      assert.deepEqual([...a.problems, ...b.problems], [])
    })

    test('withdraw asks first; then the status is Withdrawn and the change controls are gone', async () => {
      const provider = await service.newProvider()
      const id = await service.createListing(provider.token)
      const { page, problems } = await watchedPage(await newContext(PHONE))
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.goto(`${service.baseUrl}/console/listings/${id}`)
      await page.getByRole('button', { name: 'Withdraw' }).click()
      const dialog = page.getByRole('dialog')
      await dialog.getByRole('button', { name: 'Cancel' }).click()
      await dialog.waitFor({ state: 'hidden' })
      assert.equal((await service.readListing(provider.token, id)).status, 'active')
      await page.getByRole('button', { name: 'Withdraw' }).click()
      await dialog.getByRole('button', { name: 'Withdraw listing' }).click()
      await page.locator('.meta').getByText('Withdrawn', { exact: true }).waitFor()
      assert.equal(await page.getByRole('button', { name: 'Save changes' }).count(), 0)
      assert.equal(await page.getByRole('button', { name: 'Withdraw' }).count(), 0)
      assert.equal(await page.getByLabel('Quantity').count(), 0)
      assert.equal((await service.readListing(provider.token, id)).status, 'withdrawn')
      assert.deepEqual(problems, [])
    })

    test('listings page by page, newest first; each row opens its listing', async () => {
      const provider = await service.newProvider()
      const references: string[] = []
      for (let k = 0; k < 12; k++) {
        references.push(`page-${String(k).padStart(2, '0')}`)
        await service.createListing(provider.token, { referenceId: references[k] })
      }
      const { page, problems } = await watchedPage(await newContext(PHONE))
      await signInWithToken(page, service.baseUrl, provider.token)
      const rows = page.locator('.listings li')
      await rows.first().waitFor()
      assert.equal(await rows.count(), 10)
      assert.match(await rows.first().innerText(), /page-11/)
      assert.match(await rows.first().innerText(), /Active/)
      assert.match(await rows.first().innerText(), /\d:\d\d:\d\d left/)
      await page.getByRole('button', { name: 'Next page' }).click()
      await page.getByRole('link', { name: /page-00/ }).waitFor()
      assert.equal(await rows.count(), 2)
      await page.getByRole('button', { name: 'Previous page' }).click()
      await page.getByRole('link', { name: /page-11/ }).click()
      await page.getByRole('heading', { level: 1, name: 'Morning Bakery' }).waitFor()
      assert.deepEqual(problems, [])
    })

    test('webhooks: add (secret shown once, with copy), deliveries, rotate, enable, delete with confirmation', async () => {
      const provider = await service.newProvider()
      const receiver = await startReceiver()
      try {
        const context = await newContext()
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: service.baseUrl })
        const { page, problems } = await watchedPage(context)
        await signInWithToken(page, service.baseUrl, provider.token)
        await page.getByRole('link', { name: 'Webhooks' }).click()
        await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor()
        await page.getByLabel('URL').fill('not a url')
        await page.getByRole('button', { name: 'Add webhook' }).click()
        assert.equal(await page.locator(field('/url')).getAttribute('aria-invalid'), 'true')
        await page.getByLabel('URL').fill(receiver.url)
        await page.getByRole('checkbox', { name: 'Expired' }).uncheck()
        await page.getByRole('button', { name: 'Add webhook' }).click()
        const secret = await page.locator('.secret-value').innerText()
        assert.match(secret, /^whsec_/)
        await page.getByRole('button', { name: 'Copy' }).click()
        await page.getByText('Copied.').waitFor()
        assert.equal(await page.evaluate('navigator.clipboard.readText()'), secret)
        await page.getByRole('button', { name: 'Done' }).click()
        assert.equal(await page.locator('.secret-value').count(), 0, 'shown once')
        // What was sent: every type offered but the one unticked, the reservation types among them.
        const made = await (await fetch(`${service.baseUrl}/api/v1/webhooks`, { headers: { authorization: `Bearer ${provider.token}` } })).json()
        assert.deepEqual(
          made.data[0].events,
          EventTypes.filter((type) => type !== 'listing.expired'),
        )

        await service.createListing(provider.token)
        await receiver.waitFor((deliveries) => deliveries.length >= 1, 10_000)
        // The attempt is logged once the receiver has answered; read the log until it is there.
        const webhooks = await (await fetch(`${service.baseUrl}/api/v1/webhooks`, { headers: { authorization: `Bearer ${provider.token}` } })).json()
        const webhookId = webhooks.data[0].id
        for (let tries = 0; tries < 50; tries++) {
          const log = await (
            await fetch(`${service.baseUrl}/api/v1/webhooks/${webhookId}/deliveries`, { headers: { authorization: `Bearer ${provider.token}` } })
          ).json()
          if (log.data.some((attempt: any) => attempt.outcome === 'succeeded')) break
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        await page.getByRole('button', { name: 'Deliveries' }).click()
        await page.getByRole('cell', { name: 'Succeeded' }).waitFor()

        await page.getByRole('button', { name: 'Rotate secret' }).click()
        const rotated = await page.locator('.secret-value').innerText()
        assert.match(rotated, /^whsec_/)
        assert.notEqual(rotated, secret)
        await page.getByRole('button', { name: 'Done' }).click()

        // A 410 Gone disables the endpoint at once; "Enable" turns it back on.
        receiver.answer = () => 410
        await service.createListing(provider.token)
        for (let tries = 0; tries < 100; tries++) {
          const endpoint = await (
            await fetch(`${service.baseUrl}/api/v1/webhooks/${webhookId}`, { headers: { authorization: `Bearer ${provider.token}` } })
          ).json()
          if (endpoint.status === 'disabled') break
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        await page.reload()
        await page.getByText('Disabled', { exact: true }).waitFor()
        await page.getByRole('button', { name: 'Enable' }).click()
        await page.getByText('Enabled', { exact: true }).waitFor()
        assert.equal(await page.getByRole('button', { name: 'Enable' }).count(), 0)

        await page.getByRole('button', { name: 'Delete' }).click()
        await page.getByRole('dialog').getByRole('button', { name: 'Delete webhook' }).click()
        await page.getByText('No webhooks yet.').waitFor()
        assert.deepEqual(problems, [])
      } finally {
        await receiver.close()
      }
    })

    test('webhooks: the event types in two groups, Listings and Reservations, named apart in both languages at both sizes', async () => {
      const provider = await service.newProvider('Grouped Bakery')
      for (const language of ['en', 'ar'] as const) {
        const t = WEBHOOK_WORDS[language]
        for (const viewport of [PHONE, DESKTOP]) {
          const at = `${language}, ${viewport.width} px`
          const context = await browser.newContext({ viewport, extraHTTPHeaders: { 'accept-language': language } })
          contexts.push(context)
          const watched = await watchedPage(context)
          const { page, problems } = watched
          await page.goto(`${service.baseUrl}/console`)
          await page.getByLabel(t.token).fill(provider.token)
          await page.getByRole('button', { name: t.signIn }).click()
          await page.getByRole('link', { name: t.webhooks, exact: true }).click()
          await shown(watched, page.getByRole('heading', { level: 1, name: t.webhooks, exact: true }))
          for (const [group, labels] of [
            [t.listingsGroup, t.labels.slice(0, 4)],
            [t.reservationsGroup, t.labels.slice(4)],
          ] as const) {
            const boxes = page.getByRole('group', { name: group, exact: true }).getByRole('checkbox')
            assert.deepEqual(await boxes.evaluateAll((inputs) => inputs.map((input) => (input as HTMLInputElement).labels?.[0]?.textContent)), labels, at)
          }
          // Tests find a checkbox by a part of its name: each name finds exactly one, and every box is ticked at first.
          for (const label of t.labels) {
            const box = page.getByRole('checkbox', { name: label })
            assert.equal(await box.count(), 1, `${at}: "${label}" names one checkbox`)
            assert.equal(await box.isChecked(), true, `${at}: "${label}" is ticked at first`)
          }
          assert.deepEqual(await seriousViolations(page), [], at)
          assert.ok((await page.evaluate<number>('document.documentElement.scrollWidth')) <= viewport.width, `${at}: nothing scrolls sideways`)
          assert.deepEqual(problems, [])
          await context.close()
        }
      }
    })

    test('webhooks from the keyboard, in Arabic on a phone: Tab through the grouped types to an endpoint of one reservation type, delivered and logged', async () => {
      const provider = await service.newProvider('Keyboard Hooks')
      const market = await service.newMarketplace('Hooks Market')
      const listingId = await service.createListing(provider.token)
      const receiver = await startReceiver()
      try {
        const t = WEBHOOK_WORDS.ar
        const context = await browser.newContext({ viewport: PHONE, extraHTTPHeaders: { 'accept-language': 'ar' } })
        contexts.push(context)
        const watched = await watchedPage(context)
        const { page, problems } = watched
        await page.goto(`${service.baseUrl}/console/webhooks`)
        await page.getByLabel(t.token).focus()
        await page.keyboard.type(provider.token)
        await page.keyboard.press('Enter')
        await shown(watched, page.getByRole('heading', { level: 1, name: t.webhooks, exact: true }))
        await page.getByText(t.noWebhooks).waitFor()

        const focused = () =>
          page.evaluate(() => {
            const element = document.activeElement as HTMLInputElement
            const style = getComputedStyle(element)
            return { name: element.labels?.[0]?.textContent ?? element.textContent ?? '', outline: style.outlineStyle, width: style.outlineWidth }
          })
        const tabTo = async (expected: string) => {
          await page.keyboard.press('Tab')
          const now = await focused()
          assert.equal(now.name, expected)
          assert.ok(now.outline !== 'none' && now.width !== '0px', `focus is visible on ${expected}`)
        }
        await page.locator(field('/url')).focus()
        await page.keyboard.type(receiver.url)
        // Every box but "تأكيد حجز" (reservation.confirmed) is unticked with the space bar.
        for (const label of t.labels) {
          await tabTo(label)
          if (label !== 'تأكيد حجز') await page.keyboard.press('Space')
        }
        await tabTo(t.addWebhook)
        await page.keyboard.press('Enter')
        await shown(watched, page.locator('.secret-value'))
        const webhooks = await (await fetch(`${service.baseUrl}/api/v1/webhooks`, { headers: { authorization: `Bearer ${provider.token}` } })).json()
        assert.deepEqual(webhooks.data[0].events, ['reservation.confirmed'])
        assert.equal(await page.locator('.webhook .hint').innerText(), 'تأكيد حجز')

        // A hold and its confirmation: the confirmation is delivered, the hold and the listing's update are not.
        const call = async (path: string, body?: unknown) => {
          const answer = await fetch(`${service.baseUrl}${path}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${market.token}`, 'content-type': 'application/json' },
            body: JSON.stringify(body ?? {}),
          })
          const text = await answer.text()
          assert.ok(answer.status < 300, `${path} answered ${answer.status}: ${text}`)
          return JSON.parse(text)
        }
        const reservation = await call('/api/v1/reservations', { listingId, referenceId: 'hook-1', items: [{ position: 0, quantity: 1 }] })
        await call(`/api/v1/reservations/${reservation.id}/confirm`)
        await receiver.waitFor((deliveries) => deliveries.length >= 1, 10_000)
        for (let tries = 0; tries < 50; tries++) {
          const log = await (
            await fetch(`${service.baseUrl}/api/v1/webhooks/${webhooks.data[0].id}/deliveries`, { headers: { authorization: `Bearer ${provider.token}` } })
          ).json()
          if (log.data.some((attempt: any) => attempt.outcome === 'succeeded')) break
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        assert.deepEqual(
          receiver.deliveries.map((delivery) => delivery.event.type),
          ['reservation.confirmed'],
        )
        await page.getByRole('button', { name: t.done }).focus()
        await page.keyboard.press('Enter')
        await page.getByRole('button', { name: t.deliveries }).focus()
        await page.keyboard.press('Enter')
        // The log names the type as the checkbox did.
        await shown(watched, page.getByRole('cell', { name: 'تأكيد حجز', exact: true }))
        assert.deepEqual(problems, [])
      } finally {
        await receiver.close()
      }
    })

    test('sign out ends the session: the old cookie no longer opens the API', async () => {
      const provider = await service.newProvider()
      const context = await newContext()
      const { page } = await watchedPage(context)
      await signInWithToken(page, service.baseUrl, provider.token)
      const cookie = (await context.cookies()).find((c) => c.name === 'console_session')?.value as string
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.getByLabel('API token').waitFor()
      const answer = await fetch(`${service.baseUrl}/api/v1/listing`, { headers: { cookie: `console_session=${cookie}`, 'x-console-session': '1' } })
      assert.equal(answer.status, 401)
      await page.reload()
      await page.getByLabel('API token').waitFor()
    })

    test('revoking the token ends an open console session: the next action shows the sign-in page', async () => {
      const provider = await service.newProvider()
      const { page } = await watchedPage(await newContext())
      await signInWithToken(page, service.baseUrl, provider.token)
      await service.cli('token', 'revoke', provider.tokenId)
      await page.getByRole('link', { name: 'Activity' }).click()
      await page.getByRole('alert').filter({ hasText: 'session has ended' }).waitFor()
      await page.getByLabel('API token').waitFor()
    })
  })
}
