import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import sharp from 'sharp'
import {
  browserAvailable,
  descriptionOf,
  listingIdOf,
  DESKTOP,
  launchBrowser,
  PHONE,
  seriousViolations,
  shown,
  signInWithToken,
  startConsoleService,
  startedFromProviderName,
  watchedPage,
  type ConsoleService,
} from './console-browser.js'

// The console's photo inputs (CONSOLE.md, "Photos"): a photo chosen beside an image URL is uploaded at once
// (POST /api/v1/images with the session cookie), its progress shown, then a preview named after the brand or
// item, and its hosted url put in the URL field; a refusal is shown at that photo input. Real image files, made
// here, go through a real browser to the real service.

/** The upload limit of the service under test: small, so that a refused size is quick to make. */
const MAX_BYTES = 200_000

/** A photo of noise (so that it does not compress): about `side`² × 3 bytes as PNG. */
function noisePhoto(side: number, format: 'png' | 'jpeg'): Promise<Buffer> {
  const image = sharp(randomBytes(side * side * 3), { raw: { width: side, height: side, channels: 3 } })
  return (format === 'png' ? image.png({ compressionLevel: 0 }) : image.jpeg({ quality: 95 })).toBuffer()
}

const field = (pointer: string) => `[name="${pointer}"]`

/** Waits (bounded) until the URL field named `pointer` holds a url of a photo this service hosts. */
async function hostedUrlIn(page: Page, pointer: string): Promise<string> {
  await page.waitForFunction(
    (name) => /\/images\/img_[A-Za-z0-9_-]+\.(png|jpg)$/.test(document.querySelector<HTMLInputElement>(`[name="${name}"]`)?.value ?? ''),
    pointer,
    { timeout: 20_000 },
  )
  return page.locator(field(pointer)).inputValue()
}

if (browserAvailable()) {
  describe('photos from the console', { timeout: 600_000 }, () => {
    let service: ConsoleService
    let browser: Browser
    let store: string
    let png: Buffer
    let jpeg: Buffer

    before(async () => {
      store = mkdtempSync(join(tmpdir(), 'console-photos-'))
      ;[service, browser, png, jpeg] = await Promise.all([
        startConsoleService({ IMAGE_STORE_URL: `file:${store}`, IMAGE_MAX_BYTES: String(MAX_BYTES) }),
        launchBrowser(),
        noisePhoto(150, 'png'),
        noisePhoto(400, 'jpeg'),
      ])
      assert.ok(png.length > 60_000 && png.length < MAX_BYTES, `a PNG of ${png.length} bytes`)
      assert.ok(jpeg.length < MAX_BYTES, `a JPEG of ${jpeg.length} bytes`)
    })
    after(async () => {
      await browser?.close()
      await service?.close()
      rmSync(store, { recursive: true, force: true })
    })

    async function context(viewport = PHONE, language: 'en' | 'ar' = 'en'): Promise<BrowserContext> {
      return browser.newContext({ viewport, locale: language === 'en' ? 'en-US' : 'ar', extraHTTPHeaders: { 'accept-language': language } })
    }

    test('a brand and an item photo: uploaded at once with progress, previewed under the names, published by their urls', async () => {
      const provider = await service.newProvider('Photo Bakery')
      const ctx = await context()
      const watched = await watchedPage(ctx)
      const { page, problems } = watched
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.getByRole('link', { name: 'New listing' }).click()
      await startedFromProviderName(page, '/brand/displayName/en', 'Photo Bakery')
      await page.getByLabel('Brand name (Arabic)').fill('مخبز الصور')
      await page.getByLabel('Brand name (English)').fill('Photo Bakery')

      const brandPhoto = page.getByLabel('Brand photo')
      assert.equal(await brandPhoto.getAttribute('type'), 'file')
      assert.equal(await brandPhoto.getAttribute('accept'), 'image/*', 'a phone offers its camera')
      assert.equal(await brandPhoto.getAttribute('name'), '/brand/imageUrl#file')

      // A slow phone connection, so that the progress is there to be seen.
      const cdp = await ctx.newCDPSession(page)
      await cdp.send('Network.enable')
      await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 50, downloadThroughput: -1, uploadThroughput: 20_000 })
      const sent = page.waitForRequest((request) => request.url().endsWith('/api/v1/images'))
      await brandPhoto.setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: png })
      const progress = page.getByRole('progressbar', { name: 'Uploading…' })
      await progress.waitFor({ timeout: 10_000 })
      // Publishing before the photo is there says so, and sends nothing.
      await page.getByRole('button', { name: 'Publish' }).click()
      await page.getByRole('alert').filter({ hasText: 'A photo is still uploading' }).waitFor({ timeout: 2000 })
      const upload = await sent
      const headers = await upload.allHeaders()
      assert.equal(upload.method(), 'POST')
      assert.match(headers.cookie ?? '', /console_session=/, 'the session cookie')
      assert.equal(headers['x-console-session'], '1', 'the anti-CSRF header')
      assert.equal(headers['content-type'], 'image/png')
      assert.equal(headers['content-length'], String(png.length), 'the file’s bytes as the body')
      const brandUrl = await hostedUrlIn(page, '/brand/imageUrl')
      await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 })
      await progress.waitFor({ state: 'detached' })
      assert.ok(brandUrl.startsWith(`${service.baseUrl}/images/`), brandUrl)

      // The preview is the hosted photo, named after the brand.
      const preview = page.getByRole('img', { name: 'Photo Bakery' })
      await preview.waitFor()
      assert.equal(await preview.getAttribute('src'), brandUrl)
      await page.waitForFunction(() => [...document.images].every((image) => image.complete && image.naturalWidth > 0))
      assert.equal(await brandPhoto.getAttribute('aria-invalid'), null)
      assert.deepEqual(await seriousViolations(page), [])

      const item = page.getByRole('group', { name: 'Item 1', exact: true })
      await item.getByLabel('Name (Arabic)').fill('كرواسون')
      await item.getByLabel('Name (English)').fill('Croissant')
      await item.getByLabel('Price').fill('7.5')
      const itemPhoto = item.getByLabel('Item photo')
      assert.equal(await itemPhoto.getAttribute('name'), '/items/0/imageUrl#file')
      assert.equal(await itemPhoto.getAttribute('accept'), 'image/*')
      await itemPhoto.setInputFiles({ name: 'croissant.jpg', mimeType: 'image/jpeg', buffer: jpeg })
      const itemUrl = await hostedUrlIn(page, '/items/0/imageUrl')
      assert.match(itemUrl, /\.jpg$/)
      await item.getByRole('img', { name: 'Croissant' }).waitFor()

      // The hosted photo is served to anyone, as a marketplace would fetch it.
      const served = await fetch(itemUrl)
      assert.equal(served.status, 200)
      assert.equal(served.headers.get('content-type'), 'image/jpeg')

      await page.getByLabel('Latitude').fill('24.7')
      await page.getByLabel('Longitude').fill('46.6')
      await page.getByLabel('Discount').fill('40')
      await page.getByRole('button', { name: 'Publish' }).click()
      await shown(watched, page.getByRole('heading', { level: 1, name: 'Photo Bakery' }))
      const id = listingIdOf(page)
      const listing = await service.readListing(provider.token, id)
      assert.equal(listing.brand.imageUrl, brandUrl)
      assert.equal(listing.items[0].imageUrl, itemUrl)
      assert.deepEqual(problems, [])
      await ctx.close()
    })

    test('a refused upload is shown at its photo input, and nothing typed is lost', async () => {
      const provider = await service.newProvider('Refused Bakery')
      const ctx = await context(DESKTOP)
      const { page, problems } = await watchedPage(ctx)
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.goto(`${service.baseUrl}/console/new`)
      await startedFromProviderName(page, '/brand/displayName/en', 'Refused Bakery')
      await page.getByLabel('Brand name (English)').fill('Refused Bakery')
      await page.getByLabel('Brand image URL').fill('https://example.com/typed.png')
      await page.getByLabel('Discount').fill('25')
      const brandPhoto = page.getByLabel('Brand photo')

      // Text renamed .png: the browser calls it image/png, the service judges the bytes: 415.
      const answered = page.waitForResponse((response) => response.url().endsWith('/api/v1/images'))
      await brandPhoto.setInputFiles({ name: 'menu.png', mimeType: 'image/png', buffer: Buffer.from('Croissant 7.50\nCoffee 19.99\n') })
      assert.equal((await answered).status(), 415)
      await page.locator(`${field('/brand/imageUrl#file')}[aria-invalid="true"]`).waitFor()
      const said = await descriptionOf(brandPhoto)
      const problem = (await (await answered).json()) as { detail: string }
      assert.equal(said, problem.detail, 'the service’s own message')
      assert.equal(await page.getByLabel('Brand image URL').inputValue(), 'https://example.com/typed.png')
      assert.equal(await page.getByLabel('Brand name (English)').inputValue(), 'Refused Bakery')
      assert.equal(await page.getByLabel('Discount').inputValue(), '25')
      assert.equal(await page.getByLabel('Brand image URL').getAttribute('aria-invalid'), null, 'the URL field is not what failed')
      assert.deepEqual(await seriousViolations(page), [])

      // Larger than IMAGE_MAX_BYTES: 413, at the item's photo input this time.
      const large = await noisePhoto(300, 'png')
      assert.ok(large.length > MAX_BYTES)
      const itemPhoto = page.getByRole('group', { name: 'Item 1', exact: true }).getByLabel('Item photo')
      await itemPhoto.setInputFiles({ name: 'big.png', mimeType: 'image/png', buffer: large })
      await page.locator(`${field('/items/0/imageUrl#file')}[aria-invalid="true"]`).waitFor({ timeout: 20_000 })
      assert.match(await descriptionOf(itemPhoto), /larger than/)
      assert.equal(await page.locator(field('/items/0/imageUrl')).inputValue(), '')

      // The same photo input takes a good photo afterwards: the refusal goes.
      await brandPhoto.setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: png })
      await hostedUrlIn(page, '/brand/imageUrl')
      assert.equal(await brandPhoto.getAttribute('aria-invalid'), null)
      assert.deepEqual(problems, [])
      await ctx.close()
    })

    for (const viewport of [PHONE, DESKTOP]) {
      test(`in Arabic at ${viewport.width} px: the photo inputs by their Arabic names, the preview named in Arabic, axe clean`, async () => {
        const provider = await service.newProvider('مخبز الصور')
        const ctx = await context(viewport, 'ar')
        const watched = await watchedPage(ctx)
        const { page, problems } = watched
        await page.goto(`${service.baseUrl}/console`)
        await page.getByLabel('رمز الواجهة').fill(provider.token)
        await page.getByRole('button', { name: 'دخول' }).click()
        await page.getByRole('heading', { level: 1, name: 'العروض' }).waitFor()
        await page.getByRole('link', { name: 'عرض جديد' }).click()
        await startedFromProviderName(page, '/brand/displayName/ar', 'مخبز الصور')
        await page.locator(field('/brand/displayName/en')).fill('Sunrise Bakery')
        await page.locator(field('/brand/displayName/ar')).fill('مخبز الشروق')
        const brandPhoto = page.getByLabel('صورة العلامة', { exact: true })
        assert.equal(await brandPhoto.getAttribute('name'), '/brand/imageUrl#file')
        await brandPhoto.setInputFiles({ name: 'logo.png', mimeType: 'image/png', buffer: png })
        const brandUrl = await hostedUrlIn(page, '/brand/imageUrl')
        await page.getByRole('img', { name: 'مخبز الشروق' }).waitFor()

        const itemPhoto = page.getByRole('group', { name: 'الصنف 1', exact: true }).getByLabel('صورة الصنف', { exact: true })
        assert.equal(await itemPhoto.getAttribute('name'), '/items/0/imageUrl#file')
        await itemPhoto.setInputFiles({ name: 'notes.png', mimeType: 'image/png', buffer: Buffer.from('not a photo at all, just words') })
        await page.locator(`${field('/items/0/imageUrl#file')}[aria-invalid="true"]`).waitFor()
        assert.match(await descriptionOf(itemPhoto), /\S/)
        assert.deepEqual(await seriousViolations(page), [])
        const width = await page.evaluate<number>('document.documentElement.scrollWidth')
        assert.ok(width <= viewport.width, `${width} px wide`)

        await page.locator(field('/items/0/displayName/ar')).fill('خبز')
        await page.locator(field('/items/0/displayName/en')).fill('Bread')
        await page.locator(field('/items/0/price')).fill('4')
        await page.locator(field('/listingDetails/discountRate')).fill('50')
        await page.locator(field('/location/latitude')).fill('24.7')
        await page.locator(field('/location/longitude')).fill('46.6')
        await page.getByRole('button', { name: 'نشر' }).click()
        await shown(watched, page.getByRole('heading', { level: 1, name: 'مخبز الشروق' }))
        const id = listingIdOf(page)
        assert.equal((await service.readListing(provider.token, id)).brand.imageUrl, brandUrl)
        assert.deepEqual(problems, [])
        await ctx.close()
      })
    }

    test('by keyboard: the photo input opens the file chooser and shows its focus', async () => {
      const provider = await service.newProvider('Keyboard Photo Bakery')
      const ctx = await context()
      const { page, problems } = await watchedPage(ctx)
      // Waited for from the start: Playwright turns on the interception of file choosers when the first one is waited
      // for, and a Space pressed while that is still under way may open a chooser nobody sees. The likely cause of one
      // CI failure (not reproduced in 11 runs, loaded or not).
      const chosen = page.waitForEvent('filechooser', { timeout: 120_000 })
      // A test that fails before the Space closes the page under it: that rejection is not this test's failure.
      chosen.catch(() => undefined)
      await signInWithToken(page, service.baseUrl, provider.token)
      await page.goto(`${service.baseUrl}/console/new`)
      await page.getByLabel('Brand web name').focus()
      await page.keyboard.press('Tab')
      const focus = await page.evaluate(() => {
        const input = document.activeElement as HTMLInputElement
        const label = getComputedStyle(input.labels?.[0] as HTMLElement)
        return { name: input.name, outline: label.outlineStyle, width: label.outlineWidth }
      })
      assert.deepEqual(focus, { name: '/brand/imageUrl#file', outline: 'solid', width: '3px' })
      await page.keyboard.press('Space')
      const chooser = await chosen
      assert.equal(chooser.isMultiple(), false)
      await chooser.setFiles({ name: 'logo.png', mimeType: 'image/png', buffer: png })
      await hostedUrlIn(page, '/brand/imageUrl')
      assert.deepEqual(problems, [])
      await ctx.close()
    })
  })
}
