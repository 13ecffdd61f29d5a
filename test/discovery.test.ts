import assert from 'node:assert/strict'
import { before, test } from 'node:test'
import { greatCircleMeters } from '../src/discovery/sphere.js'
import { item, listingBody } from './fixtures.js'
import { describeEachDialect, type Response, type TestProvider, type TestService } from './helper.js'
import { assertProblem } from './http-support.js'
import { referenceMeters } from './reference-distance.js'
import { seededRandom as random } from './seeded-random.js'

// docs/api.md#discovery: GET /api/v1/discover against brute force over the same data, on each database.

/** What the test knows of a listing it created, to decide by itself whether a query must find it. */
interface Known {
  id: string
  providerId: string
  latitude: number
  longitude: number
  discountRate: number
  expiresAtUnix: number
  withdrawn: boolean
  soldOut: boolean
}

interface Query {
  latitude: number
  longitude: number
  radiusKm: number
  sort: 'distance' | 'ending_soon'
  minDiscountRate: number
}

/** The answer brute force gives: every matching listing, in order, with its rounded distance. */
function bruteForce(known: Known[], query: Query, nowMs: number): Array<[string, number]> {
  const matches = known
    .filter((l) => !l.withdrawn && !l.soldOut && nowMs < l.expiresAtUnix * 1000 && l.discountRate >= query.minDiscountRate)
    .map((l) => ({ l, d: referenceMeters(query.latitude, query.longitude, l.latitude, l.longitude) }))
    .filter(({ d }) => d <= query.radiusKm * 1000)
  const key = (m: { l: Known; d: number }) => (query.sort === 'distance' ? m.d : m.l.expiresAtUnix)
  matches.sort((a, b) => key(a) - key(b) || (a.l.id < b.l.id ? -1 : 1))
  return matches.map(({ l, d }) => [l.id, Math.round(d)])
}

const search = (q: Record<string, string | number>) => `/api/v1/discover?${new URLSearchParams(Object.entries(q).map(([k, v]) => [k, String(v)]))}`

/** Every page of a query, following nextCursor; each page checked for shape. */
async function walk(service: TestService, token: string, query: Query, limit: number): Promise<{ pages: Response[]; hits: Array<[string, number]> }> {
  const pages: Response[] = []
  const hits: Array<[string, number]> = []
  let cursor: string | null = null
  do {
    const page = await service.request('GET', search({ ...query, limit, ...(cursor === null ? {} : { cursor }) }), { token })
    assert.equal(page.status, 200, page.text)
    assert.ok(page.body.data.length <= limit)
    for (const entry of page.body.data) hits.push([entry.listing.id, entry.distanceMeters])
    cursor = page.body.nextCursor
    if (cursor !== null) assert.equal(page.body.data.length, limit, 'only the last page is short')
    pages.push(page)
    assert.ok(pages.length < 500, 'the walk ends')
  } while (cursor !== null)
  return { pages, hits }
}

/** Cluster centres: a city, both sides of the antimeridian, both poles. */
const CLUSTERS = [
  { latitude: 24.7136, longitude: 46.6753, spread: 0.3 },
  { latitude: 10, longitude: 179.99, spread: 0.15 },
  { latitude: 10, longitude: -179.99, spread: 0.15 },
  { latitude: 89.98, longitude: 0, spread: 0.02 },
  { latitude: -89.99, longitude: 120, spread: 0.01 },
]

const clamp = (value: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, value))
const round6 = (value: number) => Math.round(value * 1e6) / 1e6

await describeEachDialect('discovery', (service) => {
  const known: Known[] = []
  let marketplace: TestProvider
  const providers: TestProvider[] = []
  const providerOf = (l: Known) => providers.find((p) => p.id === l.providerId) as TestProvider

  async function createAt(provider: TestProvider, latitude: number, longitude: number, overrides: { discountRate?: number; type?: string } = {}) {
    const body = listingBody({
      location: { latitude, longitude },
      listingDetails: { discountRate: overrides.discountRate ?? 0.5, type: overrides.type ?? 'timed', isAssignedToDriver: true },
      items: [item(0, { quantity: 2 }), item(1, { quantity: 1 })],
    })
    const created = await service.create(provider.token, body)
    assert.equal(created.status, 201, created.text)
    const listing: Known = {
      id: created.body.listingId,
      providerId: provider.id,
      latitude,
      longitude,
      discountRate: body.listingDetails.discountRate,
      expiresAtUnix: created.body.expiresAtUnix,
      withdrawn: false,
      soldOut: false,
    }
    known.push(listing)
    return listing
  }

  before(async () => {
    marketplace = await service.newMarketplace()
    for (const industry of ['bakery', 'grocery', 'restaurant']) providers.push(await service.newProvider({ industry }))
    const next = random(20261124)
    const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)] as T
    for (let i = 0; i < 260; i++) {
      // Some creates share their second (ties of expiresAtUnix), most move the clock on.
      if (next() < 0.7) service.clock.now += Math.floor(next() * 20_000)
      const cluster = pick(CLUSTERS)
      let latitude = round6(clamp(cluster.latitude + (next() - 0.5) * 2 * cluster.spread, -90, 90))
      let longitude = cluster.longitude + (next() - 0.5) * 2 * cluster.spread
      longitude = round6(longitude > 180 ? longitude - 360 : longitude < -180 ? longitude + 360 : longitude)
      // Ties of distance: several listings at one point.
      if (i % 20 === 0) {
        latitude = 24.7136
        longitude = 46.6753
      }
      await createAt(pick(providers), latitude, longitude, {
        discountRate: pick([0.1, 0.2, 0.35, 0.5, 0.9]),
        type: pick(['timed', 'priority_timed']),
      })
    }
    // Some withdrawn, some sold out (every quantity 0): neither may be found.
    for (const [k, l] of known.entries()) {
      if (k % 17 === 3) {
        assert.equal((await service.request('POST', `/api/v1/listing/${l.id}/withdraw`, { token: providerOf(l).token })).status, 200)
        l.withdrawn = true
      } else if (k % 13 === 5) {
        const patched = await service.request('PATCH', `/api/v1/listing/${l.id}`, {
          token: providerOf(l).token,
          json: {
            items: [
              { position: 0, quantity: 0 },
              { position: 1, quantity: 0 },
            ],
          },
        })
        assert.equal(patched.status, 200, patched.text)
        l.soldOut = true
      }
    }
    // Past the first priority_timed listings' hour: some have expired, most have not.
    service.clock.now += 50 * 60 * 1000
    const expired = known.filter((l) => service.clock.now >= l.expiresAtUnix * 1000).length
    assert.ok(expired > 10 && expired < known.length / 2, `${expired} of ${known.length} expired`)
  })

  test('every query answers what brute force over the same data does, page after page, both sorts', async () => {
    const next = random(7)
    const queries: Query[] = [
      // Across the antimeridian, both ways, and at the poles themselves.
      { latitude: 10, longitude: -179.99, radiusKm: 20, sort: 'distance', minDiscountRate: 0.1 },
      { latitude: 10, longitude: 179.99, radiusKm: 20, sort: 'ending_soon', minDiscountRate: 0.1 },
      { latitude: 10, longitude: 180, radiusKm: 50, sort: 'distance', minDiscountRate: 0.3 },
      { latitude: 90, longitude: 0, radiusKm: 5, sort: 'distance', minDiscountRate: 0.1 },
      { latitude: 89.99, longitude: -170, radiusKm: 3, sort: 'ending_soon', minDiscountRate: 0.1 },
      { latitude: -90, longitude: 0, radiusKm: 2, sort: 'distance', minDiscountRate: 0.1 },
      // The tie point, and nowhere.
      { latitude: 24.7136, longitude: 46.6753, radiusKm: 0.001, sort: 'distance', minDiscountRate: 0.1 },
      { latitude: 0, longitude: 0, radiusKm: 50, sort: 'distance', minDiscountRate: 0.1 },
    ]
    for (let i = 0; i < 40; i++) {
      const cluster = CLUSTERS[i % CLUSTERS.length] as (typeof CLUSTERS)[number]
      let longitude = cluster.longitude + (next() - 0.5) * 3 * cluster.spread
      longitude = longitude > 180 ? longitude - 360 : longitude < -180 ? longitude + 360 : longitude
      queries.push({
        latitude: round6(clamp(cluster.latitude + (next() - 0.5) * 3 * cluster.spread, -90, 90)),
        longitude: round6(longitude),
        radiusKm: Math.round((0.05 + next() * 49.95) * 1000) / 1000,
        sort: next() < 0.5 ? 'distance' : 'ending_soon',
        minDiscountRate: [0.1, 0.2, 0.5][i % 3] as number,
      })
    }
    let nonEmpty = 0
    for (const [i, query] of queries.entries()) {
      const expected = bruteForce(known, query, service.clock.now)
      const { hits } = await walk(service, marketplace.token, query, [1, 7, 20, 50][i % 4] as number)
      assert.deepEqual(hits, expected, JSON.stringify(query))
      assert.equal(new Set(hits.map(([id]) => id)).size, hits.length, 'no listing twice')
      if (expected.length > 1) nonEmpty += 1
    }
    assert.ok(nonEmpty >= 20, `${nonEmpty} queries found more than one listing`)
  })

  test('a listing is the listing as read (as its provider reads it) plus providerId, with its provider’s industry', async () => {
    const page = await service.request('GET', search({ latitude: 24.7136, longitude: 46.6753, radiusKm: 50, limit: 50 }), { token: marketplace.token })
    assert.equal(page.status, 200, page.text)
    assert.ok(page.body.data.length > 5)
    for (const { listing, distanceMeters } of page.body.data.slice(0, 5)) {
      const owner = providers.find((p) => p.id === listing.providerId) as TestProvider
      const own = await service.request('GET', `/api/v1/listing/${listing.id}`, { token: owner.token })
      assert.deepEqual(listing, { ...own.body, providerId: owner.id })
      assert.equal(listing.status, 'active')
      const l = known.find((k) => k.id === listing.id) as Known
      assert.equal(distanceMeters, Math.round(referenceMeters(24.7136, 46.6753, l.latitude, l.longitude)))
    }
    const industries = new Set(page.body.data.map((entry: any) => entry.listing.brand.industry))
    assert.ok(industries.size > 1, 'listings of several providers, each with its own industry')
  })

  test('defaults: radiusKm 5, sort distance, minDiscountRate 0.1, limit 20', async () => {
    const query: Query = { latitude: 24.7136, longitude: 46.6753, radiusKm: 5, sort: 'distance', minDiscountRate: 0.1 }
    const page = await service.request('GET', search({ latitude: 24.7136, longitude: 46.6753 }), { token: marketplace.token })
    assert.equal(page.status, 200, page.text)
    assert.deepEqual(
      page.body.data.map((entry: any) => [entry.listing.id, entry.distanceMeters]),
      bruteForce(known, query, service.clock.now).slice(0, 20),
    )
  })

  test('the radius is inclusive: a listing exactly at radiusKm is found, one metre beyond is not', async () => {
    const provider = providers[0] as TestProvider
    const listing = await createAt(provider, 40.009, 30.003)
    // The service's own unrounded distance (brute force above checks it against another formula): what the
    // comparison with radiusKm × 1000 is made on.
    const d = greatCircleMeters(40, 30, 40.009, 30.003)
    const at = (radiusKm: number) =>
      service
        .request('GET', search({ latitude: 40, longitude: 30, radiusKm }), { token: marketplace.token })
        .then((r) => r.body.data.map((e: any) => e.listing.id))
    // The smallest radiusKm (in JSON's shortest decimal) whose metres are not below the distance.
    let radiusKm = Number((d / 1000).toPrecision(15))
    while (radiusKm * 1000 < d) radiusKm = Number((radiusKm + 1e-12).toPrecision(15))
    assert.deepEqual(await at(radiusKm), [listing.id])
    assert.deepEqual(await at((d - 1) / 1000), [])
  })

  test('withdrawn, sold out, expired: gone at once; quantities back: found again', async () => {
    const provider = providers[1] as TestProvider
    const here = { latitude: -33.8688, longitude: 151.2093 }
    const found = async () =>
      (await service.request('GET', search({ ...here, radiusKm: 1 }), { token: marketplace.token })).body.data.map((e: any) => e.listing.id).sort()
    const [a, b, c] = [
      await createAt(provider, here.latitude, here.longitude),
      await createAt(provider, here.latitude, here.longitude + 0.001),
      await createAt(provider, here.latitude + 0.001, here.longitude, { type: 'priority_timed' }),
    ]
    assert.deepEqual(await found(), [a.id, b.id, c.id].sort())

    assert.equal((await service.request('POST', `/api/v1/listing/${a.id}/withdraw`, { token: provider.token })).status, 200)
    a.withdrawn = true
    assert.deepEqual(await found(), [b.id, c.id].sort())

    const soldOut = await service.request('PATCH', `/api/v1/listing/${b.id}`, {
      token: provider.token,
      json: {
        items: [
          { position: 0, quantity: 0 },
          { position: 1, quantity: 0 },
        ],
      },
    })
    assert.equal(soldOut.body.status, 'sold_out')
    assert.deepEqual(await found(), [c.id])
    const back = await service.request('PATCH', `/api/v1/listing/${b.id}`, { token: provider.token, json: { items: [{ position: 1, quantity: 4 }] } })
    assert.equal(back.body.status, 'active')
    assert.deepEqual(await found(), [b.id, c.id].sort())

    // c expires first (priority_timed): one millisecond before, it is there; at its expiry, gone.
    const saved = service.clock.now
    service.clock.now = c.expiresAtUnix * 1000 - 1
    assert.deepEqual(await found(), [b.id, c.id].sort())
    service.clock.now = c.expiresAtUnix * 1000
    assert.deepEqual(await found(), [b.id])
    service.clock.now = saved
  })

  test('a change shows on the next page: the listing as read now, version included, though pages keep listings’ texts', async () => {
    const provider = providers[1] as TestProvider
    const here = { latitude: -33.9249, longitude: 18.4241 }
    const listed = async (minDiscountRate = 0.1) =>
      (await service.request('GET', search({ ...here, radiusKm: 1, minDiscountRate }), { token: marketplace.token })).body.data.map((e: any) => e.listing)
    const created = await createAt(provider, here.latitude, here.longitude)
    const own = async () => ({ ...(await service.request('GET', `/api/v1/listing/${created.id}`, { token: provider.token })).body, providerId: provider.id })
    assert.deepEqual(await listed(), [await own()])
    assert.deepEqual(await listed(), [await own()], 'the second page, from the kept text, is the same')

    const patched = await service.request('PATCH', `/api/v1/listing/${created.id}`, {
      token: provider.token,
      json: { listingDetails: { discountRate: 0.2 }, items: [{ position: 0, price: 1.25 }] },
    })
    assert.equal(patched.status, 200, patched.text)
    created.discountRate = 0.2
    const [after] = await listed()
    assert.equal(after.version, 2)
    assert.equal(after.items[0].price, 1.25)
    assert.deepEqual(after, await own())
    assert.deepEqual(await listed(0.3), [], 'discounted less than asked: left out')
  })

  test('regression: a create at latitude 2e-323 answered 500 on PostgreSQL (its index expression underflowed)', async () => {
    const provider = providers[2] as TestProvider
    const tiny = [await createAt(provider, 2e-323, 1e-310), await createAt(provider, 90, 1e-310), await createAt(provider, -1e-300, -5e-324)]
    const found = await service.request('GET', search({ latitude: 0, longitude: 0, radiusKm: 1 }), { token: marketplace.token })
    assert.deepEqual(
      found.body.data.map((e: any) => [e.listing.id, e.distanceMeters]).sort(),
      [
        [tiny[0]?.id, 0],
        [tiny[2]?.id, 0],
      ].sort(),
    )
    const pole = await service.request('GET', search({ latitude: 90, longitude: 0, radiusKm: 0.001 }), { token: marketplace.token })
    assert.deepEqual(
      pole.body.data.map((e: any) => e.listing.id),
      [tiny[1]?.id],
    )
  })

  test('minDiscountRate keeps only listings discounted at least that much', async () => {
    const query: Query = { latitude: 24.7136, longitude: 46.6753, radiusKm: 50, sort: 'ending_soon', minDiscountRate: 0.9 }
    const { hits } = await walk(service, marketplace.token, query, 50)
    assert.ok(hits.length > 0)
    assert.deepEqual(hits, bruteForce(known, query, service.clock.now))
    for (const [id] of hits) assert.equal(known.find((k) => k.id === id)?.discountRate, 0.9)
  })

  test('a cursor is bound to its query: other parameters or garbage → 400 naming cursor; another limit is fine', async () => {
    const query = { latitude: 24.7136, longitude: 46.6753, radiusKm: 50, sort: 'distance', minDiscountRate: 0.1 }
    const first = await service.request('GET', search({ ...query, limit: 3 }), { token: marketplace.token })
    const cursor = first.body.nextCursor as string
    assert.ok(cursor)
    const other = await service.request('GET', search({ ...query, radiusKm: 49, cursor }), { token: marketplace.token })
    assertProblem(other, 400, 'invalid-request')
    assert.deepEqual(
      other.body.errors.map((e: any) => e.parameter),
      ['cursor'],
    )
    for (const garbage of ['x', 'eyJ9', Buffer.from('{"q":"a","k":1,"id":"b"}').toString('base64url'), cursor.slice(0, -2), '%00']) {
      const response = await service.request('GET', `${search({ ...query })}&cursor=${garbage}`, { token: marketplace.token })
      assertProblem(response, 400, 'invalid-request')
      assert.deepEqual(
        response.body.errors.map((e: any) => e.parameter),
        ['cursor'],
        garbage,
      )
    }
    const more = await service.request('GET', search({ ...query, limit: 5, cursor }), { token: marketplace.token })
    assert.equal(more.status, 200, more.text)
    const all = await service.request('GET', search({ ...query, limit: 8 }), { token: marketplace.token })
    assert.deepEqual(
      [...first.body.data, ...more.body.data].map((e: any) => e.listing.id),
      all.body.data.map((e: any) => e.listing.id),
    )
  })

  test('strict query parameters: every bad one named, never a 5xx', async () => {
    const cases: Array<[query: string, parameters: string[]]> = [
      ['', ['latitude', 'longitude']],
      ['latitude=1', ['longitude']],
      ['latitude=91&longitude=0', ['latitude']],
      ['latitude=0&longitude=-180.5', ['longitude']],
      ['latitude=abc&longitude=1e', ['latitude', 'longitude']],
      ['latitude=&longitude=0', ['latitude']],
      ['latitude=0&longitude=0&radiusKm=0', ['radiusKm']],
      ['latitude=0&longitude=0&radiusKm=50.001', ['radiusKm']],
      ['latitude=0&longitude=0&radiusKm=-1', ['radiusKm']],
      ['latitude=0&longitude=0&sort=nearest', ['sort']],
      ['latitude=0&longitude=0&minDiscountRate=0.05', ['minDiscountRate']],
      ['latitude=0&longitude=0&minDiscountRate=1.5', ['minDiscountRate']],
      ['latitude=0&longitude=0&limit=0', ['limit']],
      ['latitude=0&longitude=0&limit=51', ['limit']],
      ['latitude=0&longitude=0&limit=1.5', ['limit']],
      ['latitude=0&longitude=0&cursor=', ['cursor']],
      ['latitude=0&longitude=0&page=2', ['page']],
      ['latitude=0&latitude=1&longitude=0', ['latitude']],
      ['latitude=Infinity&longitude=NaN&radiusKm=0x10', ['latitude', 'longitude', 'radiusKm']],
      ['latitude=1e999&longitude=0', ['latitude']],
    ]
    for (const [query, parameters] of cases) {
      const response = await service.request('GET', `/api/v1/discover?${query}`, { token: marketplace.token })
      assertProblem(response, 400, 'invalid-request')
      assert.deepEqual(response.body.errors.map((e: any) => e.parameter).sort(), [...parameters].sort(), query)
    }
    const fine = await service.request('GET', '/api/v1/discover?latitude=-0&longitude=1e-7&radiusKm=50&minDiscountRate=1&limit=50', {
      token: marketplace.token,
    })
    assert.equal(fine.status, 200, fine.text)
  })

  test('403 across kinds: a provider token on discover, a marketplace token on every listing route (the feed serves both); 401 and 404 stay', async () => {
    const provider = providers[0] as TestProvider
    assertProblem(await service.request('GET', search({ latitude: 0, longitude: 0 }), { token: provider.token }), 403, 'forbidden')
    const listingId = known[0]?.id as string
    const providerRoutes: Array<[string, string, unknown?]> = [
      ['POST', '/api/v1/listing/create', listingBody()],
      ['GET', '/api/v1/listing'],
      ['GET', `/api/v1/listing/${listingId}`],
      ['GET', '/api/v1/listing/by-reference/x'],
      ['PATCH', `/api/v1/listing/${listingId}`, { items: [{ position: 0, quantity: 1 }] }],
      ['POST', `/api/v1/listing/${listingId}/withdraw`],
    ]
    for (const [method, path, json] of providerRoutes) {
      assertProblem(await service.request(method, path, { token: marketplace.token, json }), 403, 'forbidden')
    }
    assertProblem(await service.request('GET', '/api/v1/nothing-here', { token: marketplace.token }), 404, 'not-found')
    assertProblem(await service.request('GET', search({ latitude: 0, longitude: 0 })), 401, 'unauthorized')
    // Revoked: refused once the token cache's entry (2 s) has passed.
    const revocable = await service.newMarketplace('short-lived')
    assert.equal((await service.request('GET', search({ latitude: 0, longitude: 0 }), { token: revocable.token })).status, 200)
    assert.ok(await service.providers.revokeToken(revocable.tokenId, service.clock()))
    service.clock.now += 5000
    assertProblem(await service.request('GET', search({ latitude: 0, longitude: 0 }), { token: revocable.token }), 401, 'unauthorized')
  })
})
