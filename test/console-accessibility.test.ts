import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { browserAvailable, DESKTOP, launchBrowser, PHONE, seriousViolations, startConsoleService, watchedPage, type ConsoleService } from './console-browser.js'
import { startReceiver, type Receiver } from './webhook-receiver.js'

// shared/spec/CONSOLE.md, "Quality": axe-core finds no serious or critical violation on any screen, in both
// languages, at 360 × 740 and 1280 × 800; nothing scrolls sideways on the phone; the create form works by keyboard.

type Language = 'en' | 'ar'

if (browserAvailable()) {
  describe('console accessibility', { timeout: 600_000 }, () => {
    let service: ConsoleService
    let browser: Browser
    let receiver: Receiver
    let provider: { id: string; token: string }
    let listingId: string
    let closedId: string

    before(async () => {
      ;[service, browser, receiver] = await Promise.all([startConsoleService(), launchBrowser(), startReceiver()])
      provider = await service.newProvider('Accessible Bakery')
      await fetch(`${service.baseUrl}/api/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${provider.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url }),
      })
      closedId = await service.createListing(provider.token, { referenceId: 'closed-one' })
      await fetch(`${service.baseUrl}/api/v1/listing/${closedId}/withdraw`, { method: 'POST', headers: { authorization: `Bearer ${provider.token}` } })
      listingId = await service.createListing(provider.token, { referenceId: 'open-one' }, 3)
    })
    after(async () => {
      await browser?.close()
      await receiver?.close()
      await service?.close()
    })

    /** Asserts no serious or critical axe violation, and no sideways scrolling, on the page as it is. */
    async function check(page: Page, where: string, width: number): Promise<void> {
      const violations = await seriousViolations(page)
      assert.deepEqual(violations, [], `${where}: ${JSON.stringify(violations, null, 2)}`)
      const scrollWidth = await page.evaluate<number>('document.documentElement.scrollWidth')
      assert.ok(scrollWidth <= width, `${where}: the page is ${scrollWidth} px wide in a ${width} px window`)
    }

    for (const viewport of [PHONE, DESKTOP]) {
      for (const language of ['en', 'ar'] as Language[]) {
        test(`every screen at ${viewport.width}×${viewport.height} in ${language === 'en' ? 'English' : 'Arabic'}`, async () => {
          const context = await browser.newContext({ viewport, extraHTTPHeaders: { 'accept-language': language } })
          const { page, problems } = await watchedPage(context)
          const at = (screen: string) => `${screen} (${language}, ${viewport.width} px)`
          const h1 = (name: string) => page.getByRole('heading', { level: 1, name, exact: true }).waitFor()
          const t =
            language === 'en'
              ? {
                  signIn: 'Sign in',
                  listings: 'Listings',
                  newListing: 'New listing',
                  publish: 'Publish',
                  activity: 'Activity',
                  webhooks: 'Webhooks',
                  withdraw: 'Withdraw',
                  token: 'API token',
                }
              : {
                  signIn: 'دخول',
                  listings: 'العروض',
                  newListing: 'عرض جديد',
                  publish: 'نشر',
                  activity: 'النشاط',
                  webhooks: 'الخطافات (Webhooks)',
                  withdraw: 'سحب',
                  token: 'رمز الواجهة',
                }

          await page.goto(`${service.baseUrl}/console`)
          assert.equal(await page.getAttribute('html', 'dir'), language === 'ar' ? 'rtl' : 'ltr')
          await page.getByLabel(t.token).waitFor()
          await check(page, at('sign-in'), viewport.width)
          await page.getByRole('button', { name: t.signIn }).click()
          await page.getByRole('alert').waitFor()
          await check(page, at('sign-in refused'), viewport.width)

          await page.getByLabel(t.token).fill(provider.token)
          await page.getByRole('button', { name: t.signIn }).click()
          await h1(t.listings)
          await page.locator('.listings li').first().waitFor()
          await check(page, at('listings'), viewport.width)

          await page.getByRole('link', { name: t.newListing }).click()
          await h1(t.newListing)
          await check(page, at('new listing'), viewport.width)
          await page.getByRole('button', { name: t.publish }).click()
          await page.getByRole('alert').waitFor()
          await check(page, at('new listing with errors'), viewport.width)

          await page.goto(`${service.baseUrl}/console/listings/${listingId}`)
          await page.locator('.meta').waitFor()
          await check(page, at('one listing'), viewport.width)
          await page.getByRole('button', { name: t.withdraw, exact: true }).click()
          await page.getByRole('dialog').waitFor()
          await check(page, at('withdraw dialog'), viewport.width)
          await page.keyboard.press('Escape')
          await page.getByRole('dialog').waitFor({ state: 'hidden' })

          await page.goto(`${service.baseUrl}/console/listings/${closedId}`)
          await page.locator('.meta').waitFor()
          await check(page, at('a withdrawn listing'), viewport.width)

          await page.getByRole('link', { name: t.activity, exact: true }).click()
          await page.locator('.events li').first().waitFor()
          await check(page, at('activity'), viewport.width)

          await page.getByRole('link', { name: t.webhooks, exact: true }).click()
          await page.locator('.webhooks li').first().waitFor()
          await page.locator('.webhooks li button[aria-expanded]').first().click()
          await check(page, at('webhooks'), viewport.width)
          assert.deepEqual(problems, [])
          await context.close()
        })
      }
    }

    test('keyboard only: the create form from its heading to a published listing, focus always visible', async () => {
      const context = await browser.newContext({ viewport: PHONE })
      const { page, problems } = await watchedPage(context)
      await page.goto(`${service.baseUrl}/console`)
      await page.getByLabel('API token').focus()
      await page.keyboard.type(provider.token)
      await page.keyboard.press('Enter')
      await page.getByRole('heading', { level: 1, name: 'Listings', exact: true }).waitFor()
      await page.goto(`${service.baseUrl}/console/new`)
      await page.getByRole('heading', { level: 1, name: 'New listing' }).waitFor()
      // Prefilled from the previous listing; typed over below like everything else.
      await page.waitForFunction(() => document.querySelector<HTMLInputElement>('[name="/brand/imageUrl"]')?.value.includes('/img/'))

      // A photo input is out of sight and its label is what shows it: the focus must show there.
      const focused = () =>
        page.evaluate(() => {
          const element = document.activeElement as HTMLElement
          const shown = element instanceof HTMLInputElement && element.type === 'file' ? (element.labels?.[0] ?? element) : element
          const style = getComputedStyle(shown)
          return { name: element.getAttribute('name') ?? element.textContent ?? '', outline: style.outlineStyle, width: style.outlineWidth }
        })
      const tabTo = async (expected: string) => {
        await page.keyboard.press('Tab')
        const now = await focused()
        assert.equal(now.name, expected)
        assert.ok(now.outline !== 'none' && now.width !== '0px', `focus is visible on ${expected}`)
      }
      const typeInto = async (expected: string, text: string) => {
        await tabTo(expected)
        await page.keyboard.press('Control+A')
        await page.keyboard.type(text)
      }
      await typeInto('/brand/displayName/ar', 'مخبز المفاتيح')
      await typeInto('/brand/displayName/en', 'Keyboard Bakery')
      await tabTo('/brand/urlSafeName')
      await tabTo('/brand/imageUrl#file')
      await tabTo('/brand/imageUrl')
      await typeInto('/listingDetails/discountRate', '30')
      await tabTo('/listingDetails/type')
      await page.keyboard.press('ArrowDown')
      await tabTo('/listingDetails/isAssignedToDriver')
      await page.keyboard.press('Space')
      await typeInto('/location/latitude', '21.5')
      await typeInto('/location/longitude', '39.2')
      await tabTo('Use my location')
      await typeInto('/referenceId', 'keyboard-1')
      // "Remove item 1" is disabled while there is one item, so the next stop is the item's first name.
      const item = async (k: number, ar: string, en: string, price: string) => {
        await typeInto(`/items/${k}/displayName/ar`, ar)
        await typeInto(`/items/${k}/displayName/en`, en)
        await tabTo(`/items/${k}/urlSafeName`)
        await typeInto(`/items/${k}/price`, price)
        await typeInto(`/items/${k}/quantity`, '2')
        await tabTo(`/items/${k}/category`)
        await tabTo(`/items/${k}/subCategory`)
        await tabTo(`/items/${k}/imageUrl#file`)
        await tabTo(`/items/${k}/imageUrl`)
      }
      await item(0, 'خبز', 'Bread', '5')
      await tabTo('Add item')
      await page.keyboard.press('Enter')
      // The new item is rendered, then focused: wait for that (bounded) rather than look at once.
      await page
        .waitForFunction(() => document.activeElement?.getAttribute('name') === '/items/1/displayName/ar', undefined, { timeout: 5000 })
        .catch(() => undefined)
      assert.equal((await focused()).name, '/items/1/displayName/ar', 'a new item takes the focus')
      await page.keyboard.type('كعك')
      await typeInto('/items/1/displayName/en', 'Cake')
      await tabTo('/items/1/urlSafeName')
      await typeInto('/items/1/price', '8.25')
      await tabTo('/items/1/quantity')
      await tabTo('/items/1/category')
      await tabTo('/items/1/subCategory')
      await tabTo('/items/1/imageUrl#file')
      await tabTo('/items/1/imageUrl')
      await tabTo('Add item')
      await tabTo('Publish')
      await page.keyboard.press('Enter')
      await page.getByRole('heading', { level: 1, name: 'Keyboard Bakery' }).waitFor()
      const id = new URL(page.url()).pathname.split('/').pop() as string
      const listing = await (await fetch(`${service.baseUrl}/api/v1/listing/${id}`, { headers: { authorization: `Bearer ${provider.token}` } })).json()
      assert.equal(listing.referenceId, 'keyboard-1')
      assert.equal(listing.listingDetails.type, 'priority_timed')
      assert.equal(listing.listingDetails.isAssignedToDriver, false)
      assert.deepEqual(
        listing.items.map((i: any) => [i.nameEn, i.price, i.quantity]),
        [
          ['Bread', 5, 2],
          ['Cake', 8.25, 1],
        ],
      )
      assert.deepEqual(problems, [])
      await context.close()
    })
  })
}
