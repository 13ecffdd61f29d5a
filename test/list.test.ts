import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createAjv } from '../src/http/validation.js'
import { ListingsPage } from '../src/listings/schemas.js'
import { fixtureImages, item, listingBody } from './fixtures.js'
import { describeEachDialect, type TestService } from './helper.js'

/** Creates `count` listings for a provider, one at a time (creation order is the test's subject). */
async function createMany(service: TestService, token: string, count: number, stepMs = 1, prefix = 'r'): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < count; i++) {
    const response = await service.create(token, listingBody({ referenceId: `${prefix}-${i}` }))
    assert.equal(response.status, 201, response.text)
    ids.push(response.body.listingId)
    service.clock.now += stepMs
  }
  return ids
}

const badQueries: Array<[query: string, parameter: string, detail: RegExp]> = [
  ['?page=0', 'page', />= 1/],
  ['?page=-1', 'page', />= 1/],
  ['?page=1.5', 'page', /integer/],
  ['?page=1.0', 'page', /integer/],
  ['?page=abc', 'page', /integer/],
  ['?page=', 'page', /integer/],
  ['?page', 'page', /integer/],
  ['?page=%201', 'page', /integer/],
  ['?page=1e1', 'page', /integer/],
  ['?page=0x10', 'page', /integer/],
  ['?page=99999999999999999999', 'page', /<=/],
  ['?limit=0', 'limit', />= 1/],
  ['?limit=51', 'limit', /<= 50/],
  ['?limit=-5', 'limit', />= 1/],
  ['?limit=ten', 'limit', /integer/],
  ['?limit=', 'limit', /integer/],
  ['?page=1&page=2', 'page', /at most once/],
  ['?limit=5&limit=5', 'limit', /at most once/],
  ['?offset=10', 'offset', /not an accepted parameter/],
  ['?Page=1', 'Page', /not an accepted parameter/],
]

await describeEachDialect('list: query parameters', (service) => {
  for (const [query, parameter, detail] of badQueries) {
    test(`refuses ${query}`, async () => {
      const provider = await service.newProvider()
      const response = await service.list(provider.token, query)
      assert.equal(response.status, 400, response.text)
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/)
      assert.equal(response.body.type, '/problems/invalid-request')
      assert.equal(response.body.errors.length, 1, response.text)
      assert.equal(response.body.errors[0].parameter, parameter)
      assert.equal(response.body.errors[0].pointer, undefined)
      assert.match(response.body.errors[0].detail, detail)
    })
  }

  test('reports every bad parameter at once', async () => {
    const provider = await service.newProvider()
    const response = await service.list(provider.token, '?page=0&limit=99&sort=asc')
    assert.equal(response.status, 400)
    assert.deepEqual(response.body.errors.map((e: { parameter: string }) => e.parameter).sort(), ['limit', 'page', 'sort'])
  })

  test('defaults are page 1 and limit 10; limit 50 and leading zeros are fine', async () => {
    const provider = await service.newProvider()
    await createMany(service, provider.token, 12)
    assert.equal((await service.list(provider.token)).body.content.length, 10)
    assert.equal((await service.list(provider.token, '?limit=50')).body.content.length, 12)
    assert.equal((await service.list(provider.token, '?page=2')).body.content.length, 2)
    assert.equal((await service.list(provider.token, '?page=02&limit=05')).body.content.length, 5)
  })
})

await describeEachDialect('list: order, pages and ownership', (service) => {
  test('newest first, with the exact returned shape', async () => {
    const provider = await service.newProvider({ industry: 'bakery' })
    const ids = await createMany(service, provider.token, 3, 1000)
    const response = await service.list(provider.token)

    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
    assert.deepEqual(Object.keys(response.body).sort(), ['content', 'recordCount'])
    assert.deepEqual(
      response.body.content.map((l: { id: string }) => l.id),
      [...ids].reverse(),
    )
    const newest = response.body.content[0]
    assert.deepEqual(Object.keys(newest).sort(), ['brand', 'expiresAtUnix', 'id', 'items', 'referenceId', 'status'])
    assert.deepEqual(newest.brand, { nameAr: 'مخبز الصباح', nameEn: 'Morning Bakery', industry: 'bakery' })
    assert.deepEqual(newest.items, [{ nameAr: 'وجبة 0', nameEn: 'Meal 0', price: 10, quantity: 1, category: 'product' }])
    assert.equal(newest.referenceId, 'r-2')
    assert.equal(newest.status, 'active')
  })

  test('listings created in the same millisecond keep creation order (total order, id as tie-break)', async () => {
    const provider = await service.newProvider()
    const ids = await createMany(service, provider.token, 12, 0)
    const content = (await service.list(provider.token, '?limit=50')).body.content as Array<{ id: string }>
    assert.deepEqual(
      content.map((l) => l.id),
      [...ids].reverse(),
    )
    // Within one millisecond, "id descending" is that same order.
    const sortedByIdDesc = [...ids].sort().reverse()
    assert.deepEqual(sortedByIdDesc, [...ids].reverse())
  })

  test('a clock that steps backwards does not reorder listings', async () => {
    const provider = await service.newProvider()
    const first = await createMany(service, provider.token, 2, 0)
    service.clock.now -= 60_000
    const later = await createMany(service, provider.token, 2, 0, 'later')
    service.clock.now += 60_000
    const content = (await service.list(provider.token)).body.content as Array<{ id: string }>
    assert.deepEqual(
      content.map((l) => l.id),
      [...first, ...later].reverse(),
    )
  })

  test('pages partition all listings: no repeat, no gap, and a page past the end is empty', async () => {
    const provider = await service.newProvider()
    const ids = await createMany(service, provider.token, 23)
    const seen: string[] = []
    for (let page = 1; page <= 5; page++) {
      const response = await service.list(provider.token, `?page=${page}&limit=5`)
      assert.equal(response.body.recordCount, 23)
      assert.equal(response.body.content.length, page < 5 ? 5 : 3)
      seen.push(...response.body.content.map((l: { id: string }) => l.id))
    }
    assert.deepEqual(seen, [...ids].reverse())
    const past = await service.list(provider.token, '?page=6&limit=5')
    assert.equal(past.status, 200)
    assert.deepEqual(past.body, { content: [], recordCount: 23 })
    const farPast = await service.list(provider.token, '?page=9007199254740991&limit=50')
    assert.deepEqual(farPast.body, { content: [], recordCount: 23 })
  })

  test('a provider sees only its own listings; recordCount counts only its own', async () => {
    const a = await service.newProvider()
    const b = await service.newProvider()
    const aIds = await createMany(service, a.token, 3)
    const bIds = await createMany(service, b.token, 2)
    const asA = await service.list(a.token)
    const asB = await service.list(b.token)
    assert.equal(asA.body.recordCount, 3)
    assert.equal(asB.body.recordCount, 2)
    assert.deepEqual(new Set(asA.body.content.map((l: { id: string }) => l.id)), new Set(aIds))
    assert.deepEqual(new Set(asB.body.content.map((l: { id: string }) => l.id)), new Set(bIds))
    const fresh = await service.newProvider()
    assert.deepEqual((await service.list(fresh.token)).body, { content: [], recordCount: 0 })
  })
})

await describeEachDialect('list: expiry and status', (service) => {
  test('expiresAtUnix is the creation second plus the TTL of the type', async () => {
    const provider = await service.newProvider()
    service.clock.now = Date.UTC(2026, 10, 21, 12, 0, 0, 999)
    const second = Math.floor(service.clock.now / 1000)
    const timed = await service.create(provider.token, listingBody())
    const implicit = listingBody()
    delete implicit.listingDetails.type
    const defaulted = await service.create(provider.token, implicit)
    const priority = await service.create(provider.token, listingBody({ listingDetails: { discountRate: 0.3, type: 'priority_timed' } }))
    assert.equal(timed.body.expiresAtUnix, second + 7200)
    assert.equal(defaulted.body.expiresAtUnix, second + 7200)
    assert.equal(priority.body.expiresAtUnix, second + 3600)
  })

  test('status is active while now < expiresAtUnix, then expired; recordCount counts both', async () => {
    const provider = await service.newProvider()
    service.clock.now = Date.UTC(2026, 10, 21, 13, 0, 0, 0)
    const created = await service.create(provider.token, listingBody({ listingDetails: { discountRate: 0.3, type: 'priority_timed' } }))
    await service.create(provider.token, listingBody())
    const expiresAtMs = created.body.expiresAtUnix * 1000

    service.clock.now = expiresAtMs - 1
    let content = (await service.list(provider.token)).body.content
    assert.deepEqual(
      content.map((l: { status: string }) => l.status),
      ['active', 'active'],
    )

    service.clock.now = expiresAtMs
    const response = await service.list(provider.token)
    assert.equal(response.body.recordCount, 2)
    content = response.body.content
    assert.deepEqual(
      content.map((l: { status: string }) => l.status),
      ['active', 'expired'],
    )
  })
})

await describeEachDialect('create: stored exactly as sent', (service, dialect) => {
  test('prices round-trip exactly', async () => {
    const provider = await service.newProvider()
    const prices = [19.99, 7.125, 1.005, 1, 1.1, 0.1 + 0.9, 999_999_999.999, 1_000_000_000, 33.333, 123456.789]
    const body = listingBody({ items: prices.map((price, i) => item(i, { price })) })
    assert.equal((await service.create(provider.token, body)).status, 201)
    const listed = await service.list(provider.token)
    assert.deepEqual(
      listed.body.content[0].items.map((i: { price: number }) => i.price),
      prices,
    )
    // And on the wire: 19.99 is written 19.99, not 19.989999999999998.
    assert.match(listed.text, /"price":19\.99[,}]/)
    assert.match(listed.text, /"price":7\.125[,}]/)
  })

  test(`Arabic, emoji, combining marks and surrounding spaces are stored untouched (${dialect})`, async () => {
    const provider = await service.newProvider()
    const names = [
      { ar: 'كنافة نابلسية', en: 'Knafeh 🧀🔥' },
      { ar: '  قهوة عربية  ', en: ' Arabic coffee ' },
      { ar: 'e\u0301 (decomposed é)', en: '\u00e9 (composed é)' },
      { ar: '👨‍👩‍👧 family', en: 'ZWJ 👩🏽‍🍳 chef' },
      { ar: 'ﷺ ﷽', en: 'RTL\u200fmark' },
    ]
    const body = listingBody({
      brand: { displayName: { ar: 'متجر 🛒', en: 'Shop\u00a0Name' }, urlSafeName: 'shop', imageUrl: fixtureImages.url('/tiny.gif') },
      items: names.map((displayName, i) => item(i, { displayName })),
    })
    assert.equal((await service.create(provider.token, body)).status, 201)
    const listing = (await service.list(provider.token)).body.content[0]
    assert.deepEqual(listing.brand, { nameAr: 'متجر 🛒', nameEn: 'Shop\u00a0Name', industry: 'restaurant' })
    assert.deepEqual(
      listing.items.map((i: { nameAr: string; nameEn: string }) => ({ ar: i.nameAr, en: i.nameEn })),
      names,
    )
  })

  test('a page is JSON of the ListingsPage schema, whatever characters the names hold', async () => {
    // Every character JSON must escape, and some it may not.
    const provider = await service.newProvider()
    const names = [
      { ar: 'quote " and backslash \\', en: 'tab\tnew line\ncarriage\rreturn' },
      { ar: '</script><script>alert(1)</script>', en: '\u2028 line and \u2029 paragraph separators' },
      { ar: '\u0001\u001f control characters', en: '{"json":"inside"}' },
    ]
    const body = listingBody({
      referenceId: 'quote " backslash \\ \u0007',
      brand: { displayName: { ar: '"مخبز"\\', en: 'Brand\n"quoted"' }, urlSafeName: 'brand', imageUrl: fixtureImages.url('/tiny.png') },
      items: names.map((displayName, i) => item(i, { displayName })),
    })
    const created = await service.create(provider.token, body)
    assert.equal(created.status, 201, created.text)
    const listed = await service.list(provider.token)
    assert.equal(listed.headers.get('content-type'), 'application/json; charset=utf-8')
    const validate = createAjv().compile(ListingsPage)
    assert.ok(validate(JSON.parse(listed.text)), JSON.stringify(validate.errors))
    const [listing] = listed.body.content
    assert.equal(listing.referenceId, body.referenceId)
    assert.deepEqual(listing.brand, { nameAr: '"مخبز"\\', nameEn: 'Brand\n"quoted"', industry: 'restaurant' })
    assert.deepEqual(
      listing.items.map((i: { nameAr: string; nameEn: string }) => ({ ar: i.nameAr, en: i.nameEn })),
      names,
    )
  })

  test('100 items keep the order sent, with their quantities and categories', async () => {
    const provider = await service.newProvider()
    const categories = ['service', 'product', 'tax'] as const
    const items = Array.from({ length: 100 }, (_, i) => item(i, { quantity: 1000 - i, category: categories[i % 3], price: 1 + i / 1000 }))
    assert.equal((await service.create(provider.token, listingBody({ items }))).status, 201)
    const listed = (await service.list(provider.token)).body.content[0].items
    assert.deepEqual(
      listed,
      items.map((i) => ({
        nameAr: (i.displayName as { ar: string }).ar,
        nameEn: (i.displayName as { en: string }).en,
        price: i.price,
        quantity: i.quantity,
        category: i.category,
      })),
    )
  })
})
