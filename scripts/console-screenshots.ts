import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import sharp from 'sharp'
import { DESKTOP, launchBrowser, PHONE, startConsoleService } from '../test/console-browser.js'

/**
 * `npm run console:screenshots`: the README's pictures of the console (docs/console/), taken from a real service
 * on a fresh database with a few listings, at 360 px and 1280 px, in English and Arabic. It also prints what the
 * first load of /console transfers (compressed JS + CSS) and how long it takes here, and how tall the new-listing
 * form is for one item at 360 px, for docs/design/console.md.
 */

const OUT = new URL('../docs/console/', import.meta.url)
mkdirSync(OUT, { recursive: true })

const store = mkdtempSync(join(tmpdir(), 'console-screenshots-'))
const service = await startConsoleService({ IMAGE_STORE_URL: `file:${store}` })
const browser = await launchBrowser()
try {
  const provider = await service.newProvider('Morning Bakery')
  // The bakery's logo, uploaded as the console does: the form's previews show it.
  const logo = await sharp(
    Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256"><rect width="256" height="256" fill="#f6e7cf"/>' +
        '<circle cx="128" cy="128" r="92" fill="#c8862f"/><circle cx="128" cy="128" r="56" fill="#e9b46a"/></svg>',
    ),
  )
    .png()
    .toBuffer()
  const uploaded = await fetch(`${service.baseUrl}/api/v1/images`, {
    method: 'POST',
    headers: { authorization: `Bearer ${provider.token}`, 'content-type': 'image/png' },
    body: logo,
  })
  const logoUrl = ((await uploaded.json()) as { url: string }).url
  const item = (ar: string, en: string, price: number, quantity: number, subCategory = 'main_dish') => ({
    displayName: { ar, en },
    urlSafeName: en.toLowerCase().replace(/\W+/g, '-'),
    category: 'product',
    subCategory,
    price,
    quantity,
  })
  const brand = (ar: string, en: string) => ({ displayName: { ar, en }, urlSafeName: en.toLowerCase().replace(/\W+/g, '-'), imageUrl: logoUrl })
  const make = (referenceId: string, names: [string, string], items: unknown[], discountRate: number) =>
    service.createListing(provider.token, {
      referenceId,
      brand: brand(...names),
      items,
      listingDetails: { discountRate, type: 'timed', isAssignedToDriver: true },
    })
  const token = { authorization: `Bearer ${provider.token}` }
  const withdrawn = await make('evening-bread', ['مخبز المساء', 'Evening Bread'], [item('خبز بر', 'Brown bread', 4, 10)], 0.3)
  await fetch(`${service.baseUrl}/api/v1/listing/${withdrawn}/withdraw`, { method: 'POST', headers: token })
  const soldOut = await make('sweets-0915', ['حلويات الصباح', 'Morning Sweets'], [item('كنافة', 'Kunafa', 18, 4)], 0.5)
  await fetch(`${service.baseUrl}/api/v1/listing/${soldOut}`, {
    method: 'PATCH',
    headers: { ...token, 'content-type': 'application/json' },
    body: JSON.stringify({ items: [{ position: 0, quantity: 0 }] }),
  })
  await make('coffee-1010', ['قهوة الحي', 'Neighbourhood Coffee'], [item('قهوة عربية', 'Arabic coffee', 12, 20, 'drink')], 0.25)
  const shown = await make(
    'closing-time-1800',
    ['مخبز الصباح', 'Morning Bakery'],
    [item('كرواسون بالزبدة', 'Butter croissant', 7.5, 12), item('خبز التميس', 'Tamees bread', 3, 30), item('قهوة عربية', 'Arabic coffee', 19.99, 6, 'drink')],
    0.4,
  )

  for (const language of ['en', 'ar'] as const) {
    for (const viewport of [PHONE, DESKTOP]) {
      const context = await browser.newContext({ viewport, extraHTTPHeaders: { 'accept-language': language } })
      const page = await context.newPage()
      await page.goto(`${service.baseUrl}/console`)
      await page.locator('#token').fill(provider.token)
      await page.locator('button[type=submit]').click()
      await page.locator('.listings li').first().waitFor()
      const name = (screen: string) => new URL(`${screen}-${language}-${viewport.width}.png`, OUT).pathname
      await page.screenshot({ path: name('listings') })
      await page.goto(`${service.baseUrl}/console/new`)
      // Prefilled from the latest listing, its logo shown.
      await page.locator('.preview img').waitFor()
      await page.waitForFunction(() => [...document.images].every((image) => image.complete))
      await page.screenshot({ path: name('new-listing') })
      if (viewport === PHONE) {
        const form = await page.locator('form').evaluate((element) => element.getBoundingClientRect().height)
        const whole = await page.evaluate<number>('document.documentElement.scrollHeight')
        console.log(`new listing, one item, ${language}, 360 px: form ${Math.round(form)} px, page ${whole} px`)
      }
      await page.goto(`${service.baseUrl}/console/listings/${shown}`)
      await page.locator('.meta').waitFor()
      await page.screenshot({ path: name('listing') })
      await context.close()
    }
  }

  // First load, as a phone on this machine sees it: fresh browser contexts (empty caches), brotli as browsers ask;
  // five rounds, since a shared machine's load moves single figures a lot.
  const rounds: number[] = []
  let assets = ''
  for (let round = 0; round < 5; round++) {
    const context = await browser.newContext({ viewport: PHONE })
    const page = await context.newPage()
    const started = Date.now()
    await page.goto(`${service.baseUrl}/console`)
    await page.locator('#token').waitFor()
    rounds.push(Date.now() - started)
    assets = await page.evaluate<string>(
      `JSON.stringify(performance.getEntriesByType('resource').filter((e) => /\\.(js|css)$/.test(e.name)).map((e) => ({ name: e.name.split('/').pop(), transferred: e.transferSize, encoded: e.encodedBodySize })))`,
    )
    await context.close()
  }
  rounds.sort((a, b) => a - b)
  console.log(`first load: sign-in form shown after ${rounds.join(', ')} ms (median ${rounds[2]}); assets ${assets}`)
  console.log(`screenshots in ${OUT.pathname}`)
} finally {
  await browser.close()
  await service.close()
  rmSync(store, { recursive: true, force: true })
}
