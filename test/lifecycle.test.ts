import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fixtureImages, item, listingBody } from './fixtures.js'
import { describeEachDialect, type Response, type TestService } from './helper.js'
import { assertProblem } from './http-support.js'

// docs/api.md#read-one-listing and #change-a-listing: read one listing, change it, withdraw it; statuses and versions.

const LISTING_ID_SHAPE = /^[0-9A-HJKMNP-TV-Z]{26}$/

async function createListing(service: TestService, token: string, body = listingBody({}, 3)): Promise<string> {
  const response = await service.create(token, body)
  assert.equal(response.status, 201, response.text)
  return response.body.listingId
}

const getOne = (service: TestService, token: string, id: string, headers: Record<string, string> = {}) =>
  service.request('GET', `/api/v1/listing/${id}`, { token, headers })
const byReference = (service: TestService, token: string, referenceId: string) =>
  service.request('GET', `/api/v1/listing/by-reference/${encodeURIComponent(referenceId)}`, { token })
const patch = (service: TestService, token: string, id: string, body: unknown, headers: Record<string, string> = {}) =>
  service.request('PATCH', `/api/v1/listing/${id}`, { token, json: body, headers })
const withdraw = (service: TestService, token: string, id: string, headers: Record<string, string> = {}) =>
  service.request('POST', `/api/v1/listing/${id}/withdraw`, { token, headers })

function assertListing(response: Response, version: number, status: string): any {
  assert.equal(response.status, 200, response.text)
  assert.equal(response.body.version, version, response.text)
  assert.equal(response.body.status, status, response.text)
  assert.equal(response.headers.get('etag'), `"${version}"`)
  return response.body
}

/** The status the list reports for a listing. */
async function listedStatus(service: TestService, token: string, id: string): Promise<string> {
  const page = await service.list(token, '?limit=50')
  assert.equal(page.status, 200, page.text)
  return page.body.content.find((listing: { id: string }) => listing.id === id)?.status
}

await describeEachDialect('GET one listing', (service) => {
  test('answers the listing exactly as docs/api.md#read-one-listing shows it, with ETag "1"', async () => {
    const provider = await service.newProvider({ industry: 'bakery' })
    const body = listingBody(
      {
        referenceId: 'order-1001',
        location: { latitude: 24.7136, longitude: 46.6753 },
        listingDetails: { discountRate: 0.4 },
        items: [
          item(0, { imageUrl: fixtureImages.url('/img/item-0.png'), price: 7.5, quantity: 12 }),
          item(1, { price: 19.99, category: 'service', subCategory: 'delivery' }),
        ],
      },
      2,
    )
    const created = await service.create(provider.token, body)
    assert.equal(created.status, 201, created.text)
    const response = await getOne(service, provider.token, created.body.listingId)
    assert.equal(response.status, 200, response.text)
    assert.equal(response.headers.get('etag'), '"1"')
    const createdAt = new Date(service.clock.now).toISOString()
    assert.deepEqual(response.body, {
      id: created.body.listingId,
      status: 'active',
      referenceId: 'order-1001',
      version: 1,
      createdAt,
      updatedAt: createdAt,
      expiresAtUnix: created.body.expiresAtUnix,
      location: { latitude: 24.7136, longitude: 46.6753 },
      brand: {
        nameAr: body.brand.displayName.ar,
        nameEn: body.brand.displayName.en,
        industry: 'bakery',
        urlSafeName: body.brand.urlSafeName,
        imageUrl: body.brand.imageUrl,
      },
      // Defaults filled at create: type timed, isAssignedToDriver true.
      listingDetails: { discountRate: 0.4, type: 'timed', isAssignedToDriver: true },
      items: [
        {
          position: 0,
          nameAr: 'وجبة 0',
          nameEn: 'Meal 0',
          price: 7.5,
          quantity: 12,
          category: 'product',
          subCategory: 'main_dish',
          urlSafeName: 'meal-0',
          imageUrl: fixtureImages.url('/img/item-0.png'),
        },
        // No imageUrl given: none in the answer.
        { position: 1, nameAr: 'وجبة 1', nameEn: 'Meal 1', price: 19.99, quantity: 1, category: 'service', subCategory: 'delivery', urlSafeName: 'meal-1' },
      ],
    })
  })

  test('an unknown id and another provider’s listing answer the same 404 naming listingId', async () => {
    const owner = await service.newProvider()
    const other = await service.newProvider()
    const id = await createListing(service, owner.token)
    const theirs = await getOne(service, other.token, id)
    const unknown = await getOne(service, other.token, `${id.slice(0, 25)}${id.endsWith('0') ? '1' : '0'}`)
    for (const response of [theirs, unknown]) {
      const problem = assertProblem(response, 404, 'not-found')
      assert.deepEqual(problem.errors, [{ parameter: 'listingId', detail: 'no listing of yours has this listingId' }])
    }
    assert.equal(theirs.text, unknown.text)
  })

  test('ids of every shape: never a 5xx, always a 404 naming listingId', async () => {
    const provider = await service.newProvider()
    const shapes = [
      'x',
      '0'.repeat(26),
      'o'.repeat(26),
      'I'.repeat(26),
      '%00',
      '%F0%9F%98%80',
      '..%2F..%2Fetc',
      'A'.repeat(5000),
      "1'%20or%20'1'='1",
      '%E0%A4%A',
      '-1',
      '9'.repeat(400),
    ]
    for (const shape of shapes) {
      const response = await getOne(service, provider.token, shape)
      assert.ok(response.status < 500, `${shape}: ${response.status} ${response.text}`)
      assert.ok([400, 404].includes(response.status), `${shape}: ${response.status}`)
      assertProblem(response, response.status, response.status === 404 ? 'not-found' : 'invalid-request')
    }
  })

  test('by referenceId: percent-encoded, exact, and only the caller’s', async () => {
    const owner = await service.newProvider()
    const other = await service.newProvider()
    const references = ['order/1001?x=1#y', 'طلب ١٠٠١', ' leading and trailing ', '%41', 'a'.repeat(255)]
    for (const referenceId of references) {
      const id = await createListing(service, owner.token, listingBody({ referenceId }))
      const response = await byReference(service, owner.token, referenceId)
      assert.equal(response.status, 200, `${referenceId}: ${response.text}`)
      assert.equal(response.body.id, id)
      assert.equal(response.body.referenceId, referenceId)
      assert.equal(response.headers.get('etag'), '"1"')
      assertProblem(await byReference(service, other.token, referenceId), 404, 'not-found')
    }
    // Not stored, so not found: case differs, too long, NUL, a lone surrogate's bytes.
    for (const path of ['ORDER%2F1001%3Fx%3D1%23y', 'a'.repeat(256), '%00', '%ED%A0%80', '']) {
      const response = await service.request('GET', `/api/v1/listing/by-reference/${path}`, { token: owner.token })
      assert.ok(response.status === 404, `${path}: ${response.status} ${response.text}`)
    }
  })
})

await describeEachDialect('PATCH a listing', (service) => {
  test('quantities, prices and the discount change; each change is a version, with its ETag', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token, listingBody({}, 3))
    service.clock.now += 60_000
    const changed = assertListing(
      await patch(service, provider.token, id, {
        listingDetails: { discountRate: 0.6 },
        items: [
          { position: 0, quantity: 7 },
          { position: 2, price: 19.99, quantity: 0 },
        ],
      }),
      2,
      'active',
    )
    assert.equal(changed.listingDetails.discountRate, 0.6)
    assert.deepEqual(
      changed.items.map((one: any) => [one.position, one.price, one.quantity]),
      [
        [0, 10, 7],
        [1, 11, 1],
        [2, 19.99, 0],
      ],
    )
    assert.equal(changed.updatedAt, new Date(service.clock.now).toISOString())
    assert.notEqual(changed.createdAt, changed.updatedAt)
    // What GET and the list read is what PATCH answered.
    assert.deepEqual((await getOne(service, provider.token, id)).body, changed)
    const listed = (await service.list(provider.token)).body.content.find((one: any) => one.id === id)
    assert.deepEqual(
      listed.items.map((one: any) => [one.price, one.quantity]),
      [
        [10, 7],
        [11, 1],
        [19.99, 0],
      ],
    )
    assertListing(await patch(service, provider.token, id, { items: [{ position: 1, price: 1 }] }), 3, 'active')
  })

  test('every quantity 0 is sold_out, in GET and in the list; a quantity again makes it active', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token, listingBody({}, 2))
    const soldOut = { items: [0, 1].map((position) => ({ position, quantity: 0 })) }
    assertListing(await patch(service, provider.token, id, soldOut), 2, 'sold_out')
    assert.equal(await listedStatus(service, provider.token, id), 'sold_out')
    assertListing(await patch(service, provider.token, id, { items: [{ position: 1, quantity: 3 }] }), 3, 'active')
    assert.equal(await listedStatus(service, provider.token, id), 'active')
  })

  test('a body of current values changes nothing: 200, same version, no event', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token, listingBody({}, 2))
    const before = (await getOne(service, provider.token, id)).body
    service.clock.now += 1000
    const same = await patch(service, provider.token, id, {
      listingDetails: { discountRate: 0.5 },
      items: [
        { position: 0, quantity: 1, price: 10 },
        { position: 1, price: 11.0 },
      ],
    })
    assert.deepEqual(assertListing(same, 1, 'active'), before)
    const events = await service.request('GET', '/api/v1/events', { token: provider.token })
    assert.deepEqual(
      events.body.data.map((event: any) => event.type),
      ['listing.created'],
    )
  })

  const badBodies: Array<[name: string, body: unknown, problems: Array<[pointer: string, detail: RegExp]>]> = [
    ['an empty object', {}, [['', /must change something/]]],
    ['an empty items array', { items: [] }, [['/items', /at least 1/]]],
    ['an item changing nothing', { items: [{ position: 0 }] }, [['/items/0', /quantity, price or both/]]],
    ['listingDetails without discountRate', { listingDetails: {} }, [['/listingDetails/discountRate', /required/]]],
    [
      'unknown fields',
      { items: [{ position: 0, quantity: 1, name: 'x' }], status: 'active' },
      [
        ['/status', /not an accepted/],
        ['/items/0/name', /not an accepted/],
      ],
    ],
    ['a string quantity', { items: [{ position: 0, quantity: '5' }] }, [['/items/0/quantity', /integer/]]],
    ['a negative quantity', { items: [{ position: 0, quantity: -1 }] }, [['/items/0/quantity', />= 0/]]],
    ['a fractional quantity', { items: [{ position: 0, quantity: 1.5 }] }, [['/items/0/quantity', /integer/]]],
    ['too many', { items: [{ position: 0, quantity: 1_000_001 }] }, [['/items/0/quantity', /<= 1000000/]]],
    ['a price below 1', { items: [{ position: 0, price: 0.5 }] }, [['/items/0/price', />= 1/]]],
    ['a price with 4 decimals', { items: [{ position: 0, price: 1.0001 }] }, [['/items/0/price', /3 decimal/]]],
    ['a discount below 0.1', { listingDetails: { discountRate: 0.05 } }, [['/listingDetails/discountRate', />= 0.1/]]],
    ['a boolean discount', { listingDetails: { discountRate: true } }, [['/listingDetails/discountRate', /number/]]],
    ['a position past 99', { items: [{ position: 100, quantity: 1 }] }, [['/items/0/position', /<= 99/]]],
    ['a huge position', { items: [{ position: 1e300, quantity: 1 }] }, [['/items/0/position', /<= 99/]]],
    [
      'a position given twice',
      {
        items: [
          { position: 1, quantity: 1 },
          { position: 1, price: 2 },
        ],
      },
      [['/items/1/position', /more than once/]],
    ],
    ['an array', [], [['', /object/]]],
    ['null', null, [['', /object/]]],
  ]
  for (const [name, body, problems] of badBodies) {
    test(`${name} → 400 naming every bad field; nothing changes`, async () => {
      const provider = await service.newProvider()
      const id = await createListing(service, provider.token, listingBody({}, 2))
      const response = await patch(service, provider.token, id, body)
      const problem = assertProblem(response, 400, 'invalid-request')
      const found = problem.errors.map((error: any) => [error.pointer, error.detail])
      assert.equal(found.length, problems.length, response.text)
      for (const [pointer, detail] of problems) {
        assert.ok(
          found.some(([p, d]: [string, string]) => p === pointer && detail.test(d)),
          `${pointer} ${detail}: ${response.text}`,
        )
      }
      assertListing(await getOne(service, provider.token, id), 1, 'active')
    })
  }

  test('a position the listing does not have → 400 naming /items/<k>/position; nothing changes', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token, listingBody({}, 2))
    const response = await patch(service, provider.token, id, {
      listingDetails: { discountRate: 0.9 },
      items: [
        { position: 0, quantity: 0 },
        { position: 2, quantity: 1 },
        { position: 5, price: 3 },
      ],
    })
    const problem = assertProblem(response, 400, 'invalid-request')
    assert.deepEqual(
      problem.errors.map((error: any) => error.pointer),
      ['/items/1/position', '/items/2/position'],
    )
    const after = assertListing(await getOne(service, provider.token, id), 1, 'active')
    assert.equal(after.listingDetails.discountRate, 0.5)
    assert.equal(after.items[0].quantity, 1)
  })

  test('not JSON → 415; no body → 400; unknown listing → 404', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token)
    assertProblem(
      await service.request('PATCH', `/api/v1/listing/${id}`, { token: provider.token, raw: 'x', headers: { 'content-type': 'text/plain' } }),
      415,
      'unsupported-media-type',
    )
    assertProblem(await service.request('PATCH', `/api/v1/listing/${id}`, { token: provider.token }), 400, 'invalid-request')
    assertProblem(await patch(service, provider.token, '0'.repeat(26), { items: [{ position: 0, quantity: 1 }] }), 404, 'not-found')
    const other = await service.newProvider()
    assertProblem(await patch(service, other.token, id, { items: [{ position: 0, quantity: 1 }] }), 404, 'not-found')
  })

  test('an expired or withdrawn listing → 409 listing-closed, and it does not change', async () => {
    const provider = await service.newProvider()
    const expiring = await createListing(service, provider.token, listingBody({ listingDetails: { discountRate: 0.5, type: 'priority_timed' } }))
    const withdrawn = await createListing(service, provider.token)
    assertListing(await withdraw(service, provider.token, withdrawn), 2, 'withdrawn')
    assertProblem(await patch(service, provider.token, withdrawn, { items: [{ position: 0, quantity: 5 }] }), 409, 'listing-closed')
    service.clock.now += service.config.LISTING_TTL_PRIORITY_TIMED_SECONDS * 1000
    assertProblem(await patch(service, provider.token, expiring, { items: [{ position: 0, quantity: 5 }] }), 409, 'listing-closed')
    assert.equal((await getOne(service, provider.token, expiring)).body.items[0].quantity, 1)
    assertListing(await getOne(service, provider.token, withdrawn), 2, 'withdrawn')
  })
})

await describeEachDialect('If-Match on changes', (service) => {
  test('the current version (alone, in a list, or *) applies; another version or a weak tag → 412 with the current ETag', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token)
    const change = (quantity: number) => ({ items: [{ position: 0, quantity }] })
    assertListing(await patch(service, provider.token, id, change(2), { 'if-match': '"1"' }), 2, 'active')
    assertListing(await patch(service, provider.token, id, change(3), { 'if-match': '"7", "2"' }), 3, 'active')
    assertListing(await patch(service, provider.token, id, change(4), { 'if-match': '*' }), 4, 'active')
    for (const stale of ['"3"', 'W/"4"', '"abc"', '"04"']) {
      const refused = await patch(service, provider.token, id, change(9), { 'if-match': stale })
      assertProblem(refused, 412, 'precondition-failed')
      assert.equal(refused.headers.get('etag'), '"4"')
    }
    assertProblem(await withdraw(service, provider.token, id, { 'if-match': '"3"' }), 412, 'precondition-failed')
    const current = assertListing(await getOne(service, provider.token, id), 4, 'active')
    assert.equal(current.items[0].quantity, 4)
    assertListing(await withdraw(service, provider.token, id, { 'if-match': '"4"' }), 5, 'withdrawn')
  })

  test('a malformed If-Match → 400 naming the header', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token)
    for (const garbage of ['1', 'abc', '"1', 'W/', '"1" "2"', ',', '*, "1"', 'w/"1"', '"a"b"']) {
      const response = await patch(service, provider.token, id, { items: [{ position: 0, quantity: 2 }] }, { 'if-match': garbage })
      const problem = assertProblem(response, 400, 'invalid-request')
      assert.deepEqual(
        problem.errors.map((error: any) => error.header),
        ['If-Match'],
        `${garbage}: ${response.text}`,
      )
      assertProblem(await withdraw(service, provider.token, id, { 'if-match': garbage }), 400, 'invalid-request')
    }
    assertListing(await getOne(service, provider.token, id), 1, 'active')
  })
})

await describeEachDialect('withdraw', (service) => {
  test('is final and idempotent; withdrawn wins over expired and sold out', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token, listingBody({}, 1))
    assertListing(await patch(service, provider.token, id, { items: [{ position: 0, quantity: 0 }] }), 2, 'sold_out')
    service.clock.now += 5000
    const first = assertListing(await withdraw(service, provider.token, id), 3, 'withdrawn')
    assert.equal(first.updatedAt, new Date(service.clock.now).toISOString())
    service.clock.now += 5000
    assert.deepEqual(assertListing(await withdraw(service, provider.token, id), 3, 'withdrawn'), first)
    service.clock.now += service.config.LISTING_TTL_TIMED_SECONDS * 1000
    assert.equal(await service.recordExpiries(), 0)
    assert.deepEqual(assertListing(await getOne(service, provider.token, id), 3, 'withdrawn'), first)
    assert.equal(await listedStatus(service, provider.token, id), 'withdrawn')
  })

  test('an expired listing → 409 listing-closed', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token)
    service.clock.now += service.config.LISTING_TTL_TIMED_SECONDS * 1000
    assertProblem(await withdraw(service, provider.token, id), 409, 'listing-closed')
    assert.equal((await getOne(service, provider.token, id)).body.status, 'expired')
  })

  test('takes no body: none, or an empty JSON object; anything else → 400', async () => {
    const provider = await service.newProvider()
    const first = await createListing(service, provider.token)
    const second = await createListing(service, provider.token)
    assertListing(await service.request('POST', `/api/v1/listing/${first}/withdraw`, { token: provider.token, json: {} }), 2, 'withdrawn')
    assertProblem(await service.request('POST', `/api/v1/listing/${second}/withdraw`, { token: provider.token, json: { reason: 'x' } }), 400, 'invalid-request')
    assertListing(await getOne(service, provider.token, second), 1, 'active')
    assertProblem(await withdraw(service, provider.token, '0'.repeat(26)), 404, 'not-found')
  })
})

await describeEachDialect('statuses and versions over a listing’s life', (service) => {
  test('expiry is a change: version + 1 and updatedAt at the moment of expiry, before and after it is recorded', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token, listingBody({}, 1))
    assertListing(await patch(service, provider.token, id, { items: [{ position: 0, quantity: 0 }] }), 2, 'sold_out')
    const { expiresAtUnix } = (await getOne(service, provider.token, id)).body
    service.clock.now = expiresAtUnix * 1000 - 1
    assertListing(await getOne(service, provider.token, id), 2, 'sold_out')
    service.clock.now = expiresAtUnix * 1000
    const expired = assertListing(await getOne(service, provider.token, id), 3, 'expired')
    assert.equal(expired.updatedAt, new Date(expiresAtUnix * 1000).toISOString())
    assert.equal(await listedStatus(service, provider.token, id), 'expired')
    service.clock.now += 1500
    assert.ok((await service.recordExpiries()) >= 1)
    assert.deepEqual(assertListing(await getOne(service, provider.token, id), 3, 'expired'), expired)
    assert.equal(await service.recordExpiries(), 0)
  })

  test('a create replay after changes and after the withdrawal still answers the original listing', async () => {
    const provider = await service.newProvider()
    const body = listingBody({}, 2)
    const created = await service.create(provider.token, body)
    assert.equal(created.status, 201)
    const id = created.body.listingId
    assertListing(await patch(service, provider.token, id, { items: [{ position: 0, quantity: 0 }] }), 2, 'active')
    const replay = await service.create(provider.token, body)
    assert.equal(replay.status, 200, replay.text)
    assert.deepEqual(replay.body, created.body)
    assertListing(await withdraw(service, provider.token, id), 3, 'withdrawn')
    assert.deepEqual((await service.create(provider.token, body)).body, created.body)
    assertProblem(await service.create(provider.token, { ...body, location: { latitude: 0, longitude: 0 } }), 409, 'conflict')
  })

  test('ids are of the documented shape', async () => {
    const provider = await service.newProvider()
    assert.match(await createListing(service, provider.token), LISTING_ID_SHAPE)
  })
})

await describeEachDialect('concurrent changes of one listing', (service) => {
  test('20 parallel PATCHes: all 200, 20 distinct versions, and the final state is the highest version’s', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token)
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => patch(service, provider.token, id, { items: [{ position: 0, quantity: 100 + i }] })))
    for (const answer of answers) assert.equal(answer.status, 200, answer.text)
    const versions = answers.map((answer) => answer.body.version).sort((a, b) => a - b)
    assert.deepEqual(
      versions,
      Array.from({ length: 20 }, (_, i) => i + 2),
    )
    const last = answers.find((answer) => answer.body.version === 21)
    const final = assertListing(await getOne(service, provider.token, id), 21, 'active')
    assert.equal(final.items[0].quantity, last?.body.items[0].quantity)
  })

  test('PATCHes racing a withdrawal never revive it: none succeeds after it', async () => {
    const provider = await service.newProvider()
    const id = await createListing(service, provider.token)
    const patches = Array.from({ length: 10 }, (_, i) => patch(service, provider.token, id, { items: [{ position: 0, quantity: 50 + i }] }))
    const withdrawal = withdraw(service, provider.token, id)
    const answers = await Promise.all([...patches, withdrawal])
    const withdrawnAt = (await withdrawal).body.version
    for (const answer of answers.slice(0, 10)) {
      if (answer.status === 200) assert.ok(answer.body.version < withdrawnAt, answer.text)
      else assertProblem(answer, 409, 'listing-closed')
    }
    assertListing(await getOne(service, provider.token, id), withdrawnAt, 'withdrawn')
  })
})
