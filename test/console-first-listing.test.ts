import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext } from 'playwright-core'
import {
  browserAvailable,
  descriptionOf,
  listingIdOf,
  goodImage,
  launchBrowser,
  PHONE,
  prefilledFromLastListing,
  shown,
  signInWithToken,
  startConsoleService,
  startedFromProviderName,
  watchedPage,
  type ConsoleService,
} from './console-browser.js'
import { item } from './fixtures.js'

// A seller's path through the console as a bakery on a 360 px phone takes it (issue 37's findings): what the
// form fills in by itself (the brand from the last listing, web names from the English names), what it says
// when something is missing, and what the listings screen says of each listing. The names used are CONSOLE.md's.

const field = (pointer: string) => `[name="${pointer}"]`

if (browserAvailable()) {
  describe('a first-time seller in the console', { timeout: 600_000 }, () => {
    let service: ConsoleService
    let browser: Browser

    before(async () => {
      ;[service, browser] = await Promise.all([startConsoleService(), launchBrowser()])
    })
    after(async () => {
      await browser?.close()
      await service?.close()
    })

    async function phone(language: 'en' | 'ar' = 'en'): Promise<BrowserContext> {
      return browser.newContext({ viewport: PHONE, locale: language === 'en' ? 'en-US' : 'ar', extraHTTPHeaders: { 'accept-language': language } })
    }

    test('the brand names and web name come from the previous listing, as its image and place do', async () => {
      const provider = await service.newProvider('Morning Bakery Co')
      await service.createListing(provider.token, {
        brand: { displayName: { ar: 'مخبز الصباح', en: 'Morning Bakery' }, urlSafeName: 'morning-bakery', imageUrl: goodImage() },
        location: { latitude: 21.4858, longitude: 39.1925 },
      })
      const context = await phone()
      const watched = await watchedPage(context)
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.getByRole('link', { name: 'New listing' }).click()
      await prefilledFromLastListing(page)
      assert.equal(await page.getByLabel('Brand name (Arabic)').inputValue(), 'مخبز الصباح')
      assert.equal(await page.getByLabel('Brand name (English)').inputValue(), 'Morning Bakery')
      assert.equal(await page.getByLabel('Brand web name').inputValue(), 'morning-bakery')
      assert.equal(await page.getByLabel('Brand image URL').inputValue(), goodImage())
      assert.equal(await page.getByLabel('Latitude').inputValue(), '21.4858')
      assert.equal(await page.getByLabel('Longitude').inputValue(), '39.1925')
      // A derived web name keeps following the English name.
      await page.getByLabel('Brand name (English)').fill('Morning Bakery Jeddah')
      assert.equal(await page.getByLabel('Brand web name').inputValue(), 'morning-bakery-jeddah')

      // Only the items are left to type: the listing is published with the brand as it was.
      await page.getByLabel('Brand name (English)').fill('Morning Bakery')
      await page.getByLabel('Discount').fill('30')
      const first = page.getByRole('group', { name: 'Item 1', exact: true })
      await first.getByLabel('Name (Arabic)').fill('كعك')
      await first.getByLabel('Name (English)').fill('Cake')
      await first.getByLabel('Price').fill('12')
      await page.getByRole('button', { name: 'Publish' }).click()
      await shown(watched, page.getByRole('heading', { level: 1, name: 'Morning Bakery' }))
      const id = listingIdOf(page)
      const listing = await service.readListing(provider.token, id)
      assert.deepEqual(
        [listing.brand.nameAr, listing.brand.nameEn, listing.brand.urlSafeName, listing.brand.imageUrl, listing.location.latitude],
        ['مخبز الصباح', 'Morning Bakery', 'morning-bakery', goodImage(), 21.4858],
      )
      assert.equal(listing.items[0].urlSafeName, 'cake')
      assert.deepEqual(problems, [])
      await context.close()
    })

    test('a web name of the seller’s own stays when the English name changes; the first listing starts from the provider’s name', async () => {
      const chosen = await service.newProvider('Chosen Name Bakery')
      await service.createListing(chosen.token, {
        brand: { displayName: { ar: 'مخبز', en: 'Dune Bakery' }, urlSafeName: 'dune-riyadh', imageUrl: goodImage() },
      })
      const context = await phone()
      const { page, problems } = await watchedPage(context)
      await signInWithToken(page, service.baseUrl, chosen.token)
      await page.goto(`${service.baseUrl}/console/new`)
      await prefilledFromLastListing(page)
      assert.equal(await page.getByLabel('Brand web name').inputValue(), 'dune-riyadh')
      await page.getByLabel('Brand name (English)').fill('Dune Bakery and Cafe')
      assert.equal(await page.getByLabel('Brand web name').inputValue(), 'dune-riyadh', 'chosen by the seller: kept')
      await page.getByRole('button', { name: 'Sign out' }).click()

      const first = await service.newProvider('Sunrise Bakery')
      await signInWithToken(page, service.baseUrl, first.token)
      await page.goto(`${service.baseUrl}/console/new`)
      await startedFromProviderName(page, '/brand/displayName/en', 'Sunrise Bakery')
      assert.equal(await page.getByLabel('Brand web name').inputValue(), 'sunrise-bakery')
      assert.equal(await page.getByLabel('Brand image URL').inputValue(), '', 'no previous listing: nothing else to take')
      assert.deepEqual(problems, [])
      await context.close()
    })

    test('web names follow the English names, stay small, and a space typed into one becomes "-"', async () => {
      const provider = await service.newProvider('Web Name Bakery')
      const context = await phone()
      const watched = await watchedPage(context)
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.goto(`${service.baseUrl}/console/new`)
      const brandWebName = page.getByLabel('Brand web name')
      // The form starts from the provider's name once it has loaded: typed before, the web name would be both.
      await startedFromProviderName(page, '/brand/displayName/en', 'Web Name Bakery')
      await page.getByLabel('Brand name (English)').fill('Crème Bakery & Sons')
      assert.equal(await brandWebName.inputValue(), 'creme-bakery-sons')
      const item = page.getByRole('group', { name: 'Item 1', exact: true })
      await item.getByLabel('Name (English)').fill('Butter croissant')
      assert.equal(await item.getByLabel('Web name').inputValue(), 'butter-croissant')

      // Out of the way: shorter than a name field, its explanation shown only while it is being edited, and
      // always its accessible description.
      const nameBox = await page.getByLabel('Brand name (English)').boundingBox()
      const webBox = await brandWebName.boundingBox()
      assert.ok(nameBox && webBox && webBox.height < nameBox.height, `web name ${webBox?.height} px, name ${nameBox?.height} px`)
      const hint = page.locator(`#${(await brandWebName.getAttribute('aria-describedby'))?.split(' ')[0]}`)
      assert.equal(await hint.isVisible(), false)
      assert.match(await descriptionOf(brandWebName), /A space becomes/)
      await brandWebName.focus()
      assert.equal(await hint.isVisible(), true)

      // Typed by hand, key by key, with spaces: each becomes "-" as it is typed, and the name is accepted.
      await brandWebName.fill('')
      await brandWebName.pressSequentially('Morning Bakery')
      assert.equal(await brandWebName.inputValue(), 'Morning-Bakery')
      // A space typed in the middle stays where it was typed.
      await brandWebName.press('Home')
      await brandWebName.press('ArrowRight')
      await brandWebName.press('Space')
      await brandWebName.pressSequentially('x')
      assert.equal(await brandWebName.inputValue(), 'M-xorning-Bakery')
      await page.getByLabel('Brand name (English)').fill('Morning Bakery Two')
      assert.equal(await brandWebName.inputValue(), 'M-xorning-Bakery', 'typed by hand: no longer derived')
      // Emptied and left: derived again.
      await brandWebName.fill('')
      await brandWebName.blur()
      assert.equal(await brandWebName.inputValue(), 'morning-bakery-two')
      await brandWebName.fill('Morning Bakery')
      assert.equal(await brandWebName.inputValue(), 'Morning-Bakery', 'a filled value is made acceptable too')

      await page.getByLabel('Brand name (Arabic)').fill('مخبز الصباح')
      await page.getByLabel('Brand image URL').fill(goodImage())
      await page.getByLabel('Latitude').fill('24.7')
      await page.getByLabel('Longitude').fill('46.6')
      await page.getByLabel('Discount').fill('50')
      await item.getByLabel('Name (Arabic)').fill('كرواسون')
      await item.getByLabel('Price').fill('7.5')
      await page.getByRole('button', { name: 'Publish' }).click()
      await shown(watched, page.getByRole('heading', { level: 1, name: 'Morning Bakery Two' }))
      const id = listingIdOf(page)
      const listing = await service.readListing(provider.token, id)
      assert.equal(listing.brand.urlSafeName, 'Morning-Bakery')
      assert.equal(listing.items[0].urlSafeName, 'butter-croissant')
      assert.deepEqual(problems, [])
      await context.close()
    })

    for (const language of ['en', 'ar'] as const) {
      test(`an empty image field says what to do (${language})`, async () => {
        const provider = await service.newProvider('Imageless Bakery')
        const context = await phone(language)
        const { page, problems } = await watchedPage(context)
        await page.goto(`${service.baseUrl}/console`)
        await page.locator('#token').fill(provider.token)
        await page.locator('button[type=submit]').click()
        await page.locator('.nav').waitFor()
        await page.goto(`${service.baseUrl}/console/new`)
        await page.locator(field('/brand/imageUrl')).waitFor()
        await page.getByRole('button', { name: language === 'en' ? 'Publish' : 'نشر' }).click()
        const url = page.locator(`${field('/brand/imageUrl')}[aria-invalid="true"]`)
        await url.waitFor()
        const said = await descriptionOf(url)
        assert.match(said, language === 'en' ? /^Choose a photo or paste an image address$/ : /^اختر صورة أو الصق رابط صورة$/)
        // Typed, but not an address: it says that, and what to do instead.
        await page.locator(field('/brand/imageUrl')).fill('my photo')
        await page.getByRole('button', { name: language === 'en' ? 'Publish' : 'نشر' }).click()
        await page.waitForFunction(() => /https:\/\//.test(document.getElementById('f-brand-imageUrl-error')?.textContent ?? ''), undefined, {
          timeout: 5000,
        })
        assert.deepEqual(problems, [])
        await context.close()
      })
    }

    test('"Delivered by a driver" is checked, and says what it means', async () => {
      const provider = await service.newProvider('Driver Bakery')
      const context = await phone()
      const { page } = await watchedPage(context)
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.goto(`${service.baseUrl}/console/new`)
      const driver = page.getByRole('checkbox', { name: 'Delivered by a driver' })
      assert.equal(await driver.isChecked(), true)
      assert.match(await descriptionOf(driver), /driver takes the order to the buyer.*Untick/)
      await context.close()
    })

    test('the form for one item fits in much less than the 1,757 px it took at 360 px wide', async () => {
      const provider = await service.newProvider('Short Form Bakery')
      await service.createListing(provider.token)
      for (const language of ['en', 'ar'] as const) {
        const context = await phone(language)
        const page = await context.newPage()
        await page.goto(`${service.baseUrl}/console`)
        await page.locator('#token').fill(provider.token)
        await page.locator('button[type=submit]').click()
        await page.locator('.nav').waitFor()
        await page.goto(`${service.baseUrl}/console/new`)
        await prefilledFromLastListing(page)
        const height = await page.locator('form').evaluate((form) => form.getBoundingClientRect().height)
        assert.ok(height <= 1350, `${language}: the form is ${height} px tall`)
        await context.close()
      }
    })

    for (const language of ['en', 'ar'] as const) {
      test(`a listing's card says what is sold, its price and discount, and opens it by a link naming its reference (${language})`, async () => {
        const provider = await service.newProvider('Card Bakery')
        const many = await service.createListing(provider.token, {
          referenceId: 'closing-time-1800',
          listingDetails: { discountRate: 0.4, type: 'timed', isAssignedToDriver: true },
          items: [
            item(0, { displayName: { ar: 'كرواسون بالزبدة', en: 'Butter croissant' }, price: 7.5 }),
            item(1, { displayName: { ar: 'خبز التميس', en: 'Tamees bread' }, price: 3 }),
            item(2, { displayName: { ar: 'قهوة عربية', en: 'Arabic coffee' }, price: 19.99 }),
          ],
        })
        await service.createListing(provider.token, {
          referenceId: 'one-cake',
          listingDetails: { discountRate: 0.25, type: 'timed', isAssignedToDriver: true },
          items: [item(0, { displayName: { ar: 'كعكة', en: 'Cake' }, price: 12 })],
        })
        const context = await phone(language)
        const { page, problems } = await watchedPage(context)
        await page.goto(`${service.baseUrl}/console`)
        await page.locator('#token').fill(provider.token)
        await page.locator('button[type=submit]').click()
        const rows = page.locator('.listings li')
        const expected =
          language === 'en'
            ? [/^Cake\b[\s\S]*1 item · Price: 12 · 25% off/, /^Butter croissant, Tamees bread \+1 more\b[\s\S]*3 items · Price: 3–19\.99 · 40% off/]
            : [/^كعكة[\s\S]*صنف واحد · السعر: 12 · خصم 25٪/, /^كرواسون بالزبدة، خبز التميس و1 غيرها[\s\S]*3 أصناف · السعر: 3–19\.99 · خصم 40٪/]
        for (const [index, pattern] of expected.entries()) {
          await page
            .waitForFunction(
              ([at, source]) => new RegExp(source).test((document.querySelectorAll('.listings li')[at] as HTMLElement | undefined)?.innerText ?? ''),
              [index, pattern.source] as const,
              { timeout: 10_000 },
            )
            .catch(() => undefined)
          assert.match(await rows.nth(index).innerText(), pattern)
        }
        await page.getByRole('link', { name: /closing-time-1800/ }).click()
        await page.waitForURL(`**/console/listings/${many}`)
        assert.deepEqual(problems, [])
        await context.close()
      })
    }
  })
}
