import assert from 'node:assert/strict'
import { test } from 'node:test'
import { prepareListing } from '../src/listings/columns.js'
import { legacyRequestHash } from '../src/listings/request-hash.js'
import type { CreateListingInput } from '../src/listings/schemas.js'
import { fixtureImages, item, listingBody, setAt } from './fixtures.js'
import { describeEachDialect } from './helper.js'

/** docs/api.md#create-a-listing: referenceId is the provider's idempotency key. */
await describeEachDialect('create: referenceId and idempotency', (service) => {
  test('a new listing is 201 with {success, listingId, expiresAtUnix} and nothing else', async () => {
    const provider = await service.newProvider()
    const response = await service.create(provider.token, listingBody())
    assert.equal(response.status, 201)
    assert.deepEqual(Object.keys(response.body).sort(), ['expiresAtUnix', 'listingId', 'success'])
    assert.equal(response.body.success, true)
    assert.equal(typeof response.body.listingId, 'string')
    assert.ok(Number.isInteger(response.body.expiresAtUnix))
  })

  test('an identical replay is 200 with the original response and stores nothing', async () => {
    const provider = await service.newProvider()
    const body = listingBody()
    const first = await service.create(provider.token, body)
    service.clock.now += 60_000 // a replay later must still return the original expiry
    const again = await service.create(provider.token, body)
    assert.equal(first.status, 201)
    assert.equal(again.status, 200)
    assert.deepEqual(again.body, first.body)
    assert.equal((await service.list(provider.token)).body.recordCount, 1)
  })

  test('a replay with keys in another order is the same body', async () => {
    const provider = await service.newProvider()
    const body = listingBody()
    const first = await service.create(provider.token, body)
    const reordered = {
      items: body.items.map((item: Record<string, unknown>) => Object.fromEntries(Object.entries(item).reverse())),
      listingDetails: body.listingDetails,
      brand: body.brand,
      location: { longitude: body.location.longitude, latitude: body.location.latitude },
      referenceId: body.referenceId,
    }
    const again = await service.create(provider.token, reordered)
    assert.equal(again.status, 200, again.text)
    assert.equal(again.body.listingId, first.body.listingId)
  })

  test('"same body" is judged after defaults: omitted defaults equal the explicit values', async () => {
    const provider = await service.newProvider()
    const body = listingBody()
    delete body.listingDetails.type
    delete body.listingDetails.isAssignedToDriver
    delete body.items[0].quantity
    const first = await service.create(provider.token, body)

    const explicit = structuredClone(body)
    explicit.listingDetails.type = 'timed'
    explicit.listingDetails.isAssignedToDriver = true
    explicit.items[0].quantity = 1
    const again = await service.create(provider.token, explicit)
    assert.equal(first.status, 201)
    assert.equal(again.status, 200, again.text)
    assert.equal(again.body.listingId, first.body.listingId)
  })

  test('the same referenceId with a different body is 409 conflict, and the original stays', async () => {
    const provider = await service.newProvider()
    const body = listingBody()
    const first = await service.create(provider.token, body)
    const changed = structuredClone(body)
    changed.items[0].price = 11.5
    const response = await service.create(provider.token, changed)

    assert.equal(response.status, 409)
    assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/)
    assert.equal(response.body.type, '/problems/conflict')
    assert.equal(response.body.errors[0].pointer, '/referenceId')
    const listed = await service.list(provider.token)
    assert.equal(listed.body.recordCount, 1)
    assert.equal(listed.body.content[0].id, first.body.listingId)
    assert.equal(listed.body.content[0].items[0].price, body.items[0].price)
  })

  test('every field is part of "the same body": changing any one of them is 409 conflict', async () => {
    // The fingerprint is taken over the stored columns (columns.ts): a field they left out would turn a
    // different body into a replay.
    const provider = await service.newProvider()
    const body = listingBody({}, 2)
    body.items[1].imageUrl = fixtureImages.url('/img/item.png')
    assert.equal((await service.create(provider.token, body)).status, 201)
    const changes: Array<[string, unknown]> = [
      ['/location/latitude', 24.7137],
      ['/location/longitude', 46.6754],
      ['/brand/displayName/ar', 'مخبز المساء'],
      ['/brand/displayName/en', 'Evening Bakery'],
      ['/brand/urlSafeName', 'evening-bakery'],
      ['/brand/imageUrl', fixtureImages.url('/img/other.png')],
      ['/listingDetails/discountRate', 0.25],
      ['/listingDetails/type', 'priority_timed'],
      ['/listingDetails/isAssignedToDriver', false],
      ['/items/0/displayName/ar', 'وجبة أخرى'],
      ['/items/0/displayName/en', 'Another meal'],
      ['/items/0/urlSafeName', 'another-meal'],
      ['/items/0/imageUrl', fixtureImages.url('/img/item.png')],
      ['/items/1/imageUrl', undefined],
      ['/items/0/category', 'service'],
      ['/items/0/subCategory', 'drink'],
      ['/items/0/price', 10.001],
      ['/items/0/quantity', 2],
      ['/items/2', item(2)],
    ]
    for (const [pointer, value] of changes) {
      const changed = structuredClone(body)
      setAt(changed, pointer, value)
      const response = await service.create(provider.token, changed)
      assert.equal(response.status, 409, `${pointer}: ${response.text}`)
    }
    const swapped = structuredClone(body)
    swapped.items.reverse()
    assert.equal((await service.create(provider.token, swapped)).status, 409, 'items in another order')
    assert.equal((await service.create(provider.token, body)).status, 200)
  })

  test('a listing stored with the fingerprint of before 2026-11-22 is still replayed, and still conflicts', async () => {
    const provider = await service.newProvider()
    const body = listingBody()
    const first = await service.create(provider.token, body)
    // As that version stored it: SHA-256 of the body with its defaults, keys sorted (here all are explicit).
    await service.database.kysely
      .updateTable('listings')
      .set({ request_hash: legacyRequestHash(body) })
      .where('id', '=', first.body.listingId)
      .execute()
    const again = await service.create(provider.token, body)
    assert.equal(again.status, 200, again.text)
    assert.deepEqual(again.body, first.body)
    const changed = structuredClone(body)
    changed.items[0].price = 11.5
    assert.equal((await service.create(provider.token, changed)).status, 409)
  })

  test('two providers may use the same referenceId', async () => {
    const a = await service.newProvider()
    const b = await service.newProvider()
    const body = listingBody()
    const first = await service.create(a.token, body)
    const second = await service.create(b.token, body)
    assert.equal(first.status, 201)
    assert.equal(second.status, 201)
    assert.notEqual(first.body.listingId, second.body.listingId)
  })

  test('20 parallel identical creates store one listing and all get its listingId', async () => {
    const provider = await service.newProvider()
    const body = listingBody({}, 20)
    const responses = await Promise.all(Array.from({ length: 20 }, () => service.create(provider.token, body)))

    const statuses = responses.map((r) => r.status)
    assert.equal(statuses.filter((s) => s === 201).length, 1, `statuses: ${statuses.join(', ')}`)
    assert.equal(statuses.filter((s) => s === 200).length, 19, `statuses: ${statuses.join(', ')}`)
    assert.equal(new Set(responses.map((r) => r.body.listingId)).size, 1)
    assert.equal(new Set(responses.map((r) => r.body.expiresAtUnix)).size, 1)
    const listed = await service.list(provider.token)
    assert.equal(listed.body.recordCount, 1)
    assert.equal(listed.body.content.length, 1)
  })

  test('10 parallel creates with one referenceId and different bodies: one stored, nine 409', async () => {
    const provider = await service.newProvider()
    const referenceId = `race-${Date.now()}`
    const bodies = Array.from({ length: 10 }, (_, i) => {
      const body = listingBody({ referenceId })
      body.items[0].price = 100 + i
      return body
    })
    const responses = await Promise.all(bodies.map((body) => service.create(provider.token, body)))

    const statuses = responses.map((r) => r.status).sort()
    assert.equal(statuses.filter((s) => s === 201 || s === 200).length, 1, `statuses: ${statuses.join(', ')}`)
    assert.equal(statuses.filter((s) => s === 409).length, 9, `statuses: ${statuses.join(', ')}`)
    const winner = responses.findIndex((r) => r.status === 201)
    const listed = await service.list(provider.token)
    assert.equal(listed.body.recordCount, 1)
    assert.equal(listed.body.content[0].items[0].price, 100 + winner)
  })

  test('a refused create reserves nothing: the referenceId is free afterwards', async () => {
    const provider = await service.newProvider()
    const body = listingBody()
    const bad = structuredClone(body)
    bad.items[0].price = 0
    assert.equal((await service.create(provider.token, bad)).status, 400)
    const good = await service.create(provider.token, body)
    assert.equal(good.status, 201, good.text)
  })

  // Creates that arrive together are written together (one transaction on SQLite, one statement on PostgreSQL);
  // a repeat inside such a batch must cost only itself, and be answered as the replay it is.
  test('30 parallel creates, every third repeating the one before it: 20 stored, each repeat answered with its original', async () => {
    const provider = await service.newProvider()
    const bodies = Array.from({ length: 20 }, () => listingBody())
    const sent = bodies.flatMap((body, i) => (i % 2 === 0 ? [body, body] : [body]))
    const responses = await Promise.all(sent.map((body) => service.create(provider.token, body)))
    const byReference = new Map<string, Set<string>>()
    responses.forEach((response, i) => {
      assert.ok(response.status === 201 || response.status === 200, response.text)
      const reference = sent[i]?.referenceId as string
      byReference.set(reference, (byReference.get(reference) ?? new Set()).add(response.body.listingId))
    })
    assert.equal(responses.filter((r) => r.status === 201).length, 20)
    for (const [reference, ids] of byReference) assert.equal(ids.size, 1, `${reference} answered with ${[...ids].join(', ')}`)
    const listed = await service.list(provider.token, '?limit=50')
    assert.equal(listed.body.recordCount, 20)
    assert.equal(listed.body.content.length, 20)
  })

  test('parallel creates with distinct referenceIds all succeed with dense, distinct listings', async () => {
    const provider = await service.newProvider()
    const responses = await Promise.all(Array.from({ length: 30 }, () => service.create(provider.token, listingBody())))
    assert.deepEqual(
      responses.map((r) => r.status),
      Array(30).fill(201),
    )
    const listed = await service.list(provider.token, '?limit=50')
    assert.equal(listed.body.recordCount, 30)
    assert.deepEqual(new Set(listed.body.content.map((l: { id: string }) => l.id)), new Set(responses.map((r) => r.body.listingId)))
  })
})

test('the fingerprint of a body does not change between versions (stored fingerprints must keep matching)', () => {
  // If this fails, listingRecordJson writes a different text for the same body: every stored fingerprint
  // would stop matching its replays. Give the new text a new VERSION in request-hash.ts, keep the old readable.
  const body = {
    referenceId: 'order-1',
    location: { latitude: 24.7136, longitude: 46.6753 },
    brand: { displayName: { ar: 'مخبز', en: 'Bakery' }, urlSafeName: 'bakery', imageUrl: 'https://img.example/b.png' },
    listingDetails: { discountRate: 0.5, type: 'timed', isAssignedToDriver: true },
    items: [{ displayName: { ar: 'خبز', en: 'Bread' }, urlSafeName: 'bread', category: 'product', subCategory: 'main_dish', price: 19.99, quantity: 2 }],
  } as CreateListingInput
  assert.equal(prepareListing('prv_1', body).requestHash, 'v2:2eb712fd95eedbfea523d6e9780a815e8824ed3951a01a062acc588edc37876b')
})
