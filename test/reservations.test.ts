import assert from 'node:assert/strict'
import { test } from 'node:test'
import { item, listingBody } from './fixtures.js'
import { describeEachDialect, type TestProvider, type TestService } from './helper.js'
import { assertProblem, pointersOf } from './http-support.js'

// docs/api.md#reservations: hold, confirm, release, cancel; stock exact at every instant; events to both sides.

const RSV = /^rsv_[0-9A-HJKMNP-TV-Z]{26}$/

async function aListing(service: TestService, token: string, quantities: number[] = [5, 3]): Promise<string> {
  const body = listingBody({ items: quantities.map((quantity, k) => item(k, { quantity })) })
  const created = await service.create(token, body)
  assert.equal(created.status, 201, created.text)
  return created.body.listingId
}

const hold = (service: TestService, token: string, body: Record<string, unknown>) => service.request('POST', '/api/v1/reservations', { token, json: body })
const act = (service: TestService, token: string, id: string, action: string, headers: Record<string, string> = {}) =>
  service.request('POST', `/api/v1/reservations/${id}/${action}`, { token, headers })
const stock = async (service: TestService, token: string, listingId: string) => {
  const answer = await service.request('GET', `/api/v1/listing/${listingId}/stock`, { token })
  assert.equal(answer.status, 200, answer.text)
  assert.equal(answer.headers.get('cache-control'), 'no-store')
  return answer.body as { version: number; items: Array<{ position: number; quantity: number; held: number; available: number }> }
}
const availableOf = async (service: TestService, token: string, listingId: string) => (await stock(service, token, listingId)).items.map((i) => i.available)

async function feed(service: TestService, token: string): Promise<Array<{ type: string; data: any }>> {
  const answer = await service.request('GET', '/api/v1/events?limit=100', { token })
  assert.equal(answer.status, 200, answer.text)
  return answer.body.data
}

await describeEachDialect('reservations', (service) => {
  let provider: TestProvider
  let market: TestProvider
  let other: TestProvider
  let ref = 0
  const next = () => `basket-${++ref}`

  test('set-up', async () => {
    provider = await service.newProvider({ name: 'Morning Bakery' })
    market = await service.newMarketplace('Deals App')
    other = await service.newMarketplace('Other App')
  })

  test('a hold: 201 with the reservation, Location and ETag; the price snapshot; stock and events of both sides', async () => {
    const listingId = await aListing(service, provider.token)
    const referenceId = next()
    const made = await hold(service, market.token, {
      listingId,
      referenceId,
      items: [
        { position: 1, quantity: 2 },
        { position: 0, quantity: 1 },
      ],
    })
    assert.equal(made.status, 201, made.text)
    const r = made.body
    assert.match(r.id, RSV)
    assert.equal(made.headers.get('location'), `/api/v1/reservations/${r.id}`)
    assert.equal(made.headers.get('etag'), '"1"')
    assert.deepEqual(
      {
        status: r.status,
        version: r.version,
        referenceId: r.referenceId,
        listingId: r.listingId,
        providerId: r.providerId,
        marketplace: r.marketplace,
        endedBy: r.endedBy,
      },
      { status: 'held', version: 1, referenceId, listingId, providerId: provider.id, marketplace: { id: market.id, name: 'Deals App' }, endedBy: null },
    )
    assert.deepEqual(r.items, [
      { position: 1, quantity: 2, price: 11, nameAr: 'وجبة 1', nameEn: 'Meal 1' },
      { position: 0, quantity: 1, price: 10, nameAr: 'وجبة 0', nameEn: 'Meal 0' },
    ])
    assert.equal(r.discountRate, 0.5)
    assert.equal(Date.parse(r.expiresAt) - Date.parse(r.createdAt), 600_000)
    const now = await stock(service, provider.token, listingId)
    assert.deepEqual(now.items, [
      { position: 0, quantity: 5, held: 1, available: 4 },
      { position: 1, quantity: 3, held: 2, available: 1 },
    ])
    assert.equal(now.version, 1, 'a hold does not change the listing')
    assert.deepEqual(await availableOf(service, market.token, listingId), [4, 1], 'any marketplace reads the stock of an active listing')
    const mine = (await feed(service, market.token)).filter((e) => e.data.id === r.id)
    assert.deepEqual(
      mine.map((e) => e.type),
      ['reservation.held'],
    )
    assert.deepEqual(mine[0]?.data, r)
    const providers = (await feed(service, provider.token)).filter((e) => e.type.startsWith('reservation.'))
    assert.deepEqual(providers.at(-1)?.data, r)
    assert.equal((await feed(service, other.token)).length, 0, 'another marketplace hears nothing of it')
    // Later changes of the listing do not alter the snapshot.
    assert.equal(
      (await service.request('PATCH', `/api/v1/listing/${listingId}`, { token: provider.token, json: { items: [{ position: 1, price: 99 }] } })).status,
      200,
    )
    const read = await service.request('GET', `/api/v1/reservations/${r.id}`, { token: market.token })
    assert.equal(read.body.items[0].price, 11)
  })

  test('all lines or none: 409 insufficient-stock names every short line with its available, nothing held', async () => {
    const listingId = await aListing(service, provider.token, [2, 1])
    const refused = await hold(service, market.token, {
      listingId,
      referenceId: next(),
      items: [
        { position: 0, quantity: 1 },
        { position: 1, quantity: 2 },
      ],
    })
    const body = assertProblem(refused, 409, 'insufficient-stock')
    assert.deepEqual(body.errors, [{ pointer: '/items/1/quantity', detail: body.errors[0].detail, available: 1 }])
    assert.deepEqual(await availableOf(service, provider.token, listingId), [2, 1])
    // Refused: its referenceId stays free.
    const referenceId = next()
    assertProblem(await hold(service, market.token, { listingId, referenceId, items: [{ position: 0, quantity: 3 }] }), 409, 'insufficient-stock')
    assert.equal((await hold(service, market.token, { listingId, referenceId, items: [{ position: 0, quantity: 2 }] })).status, 201)
  })

  test('order of work and strictness: 400 before replay, replay before the listing, 404, 409 closed, 400 position, 403 for providers', async () => {
    const listingId = await aListing(service, provider.token)
    const bad = assertProblem(
      await hold(service, market.token, {
        listingId,
        referenceId: '',
        items: [
          { position: 0, quantity: 0 },
          { position: 0, quantity: 1 },
        ],
        holdSeconds: 10,
        extra: 1,
      }),
      400,
      'invalid-request',
    )
    for (const pointer of ['/referenceId', '/items/0/quantity', '/holdSeconds', '/extra'])
      assert.ok(pointersOf(bad).includes(pointer), `${pointer}: ${JSON.stringify(bad)}`)
    assert.deepEqual(
      pointersOf(
        assertProblem(
          await hold(service, market.token, {
            listingId,
            referenceId: next(),
            items: [
              { position: 1, quantity: 1 },
              { position: 1, quantity: 1 },
            ],
          }),
          400,
          'invalid-request',
        ),
      ),
      ['/items/1/position'],
    )
    assertProblem(await hold(service, provider.token, { listingId, referenceId: next(), items: [{ position: 0, quantity: 1 }] }), 403, 'forbidden')
    assertProblem(
      await hold(service, market.token, { listingId: '01KAXYZ0000000ABCDEFGHJKMN', referenceId: next(), items: [{ position: 0, quantity: 1 }] }),
      404,
      'not-found',
    )
    assert.deepEqual(
      pointersOf(
        assertProblem(
          await hold(service, market.token, {
            listingId,
            referenceId: next(),
            items: [
              { position: 0, quantity: 1 },
              { position: 7, quantity: 1 },
            ],
          }),
          400,
          'invalid-request',
        ),
      ),
      ['/items/1/position'],
    )
    const withdrawn = await aListing(service, provider.token)
    assert.equal((await service.request('POST', `/api/v1/listing/${withdrawn}/withdraw`, { token: provider.token })).status, 200)
    assertProblem(
      await hold(service, market.token, { listingId: withdrawn, referenceId: next(), items: [{ position: 0, quantity: 1 }] }),
      409,
      'listing-closed',
    )
  })

  test('referenceId: the same body again is 200 with the reservation as it is now; another body 409; per marketplace', async () => {
    const listingId = await aListing(service, provider.token)
    const body = { listingId, referenceId: next(), items: [{ position: 0, quantity: 1 }] }
    const first = await hold(service, market.token, body)
    assert.equal(first.status, 201)
    assert.equal((await act(service, market.token, first.body.id, 'release')).status, 200)
    const again = await hold(service, market.token, body)
    assert.equal(again.status, 200, again.text)
    assert.equal(again.body.id, first.body.id)
    assert.equal(again.body.status, 'released')
    assertProblem(await hold(service, market.token, { ...body, items: [{ position: 0, quantity: 2 }] }), 409, 'conflict')
    assert.equal((await hold(service, other.token, body)).status, 201, 'another marketplace’s referenceIds are its own')
    assert.deepEqual(await availableOf(service, provider.token, listingId), [4, 3])
  })

  test('confirm: units leave quantity, the listing changes (version + 1, listing.updated); sold out when none is left; idempotent', async () => {
    const listingId = await aListing(service, provider.token, [2])
    const made = await hold(service, market.token, { listingId, referenceId: next(), items: [{ position: 0, quantity: 2 }] })
    assert.deepEqual(await availableOf(service, market.token, listingId), [0])
    assertProblem(await act(service, market.token, made.body.id, 'confirm', { 'if-match': '"7"' }), 412, 'precondition-failed')
    assertProblem(await act(service, provider.token, made.body.id, 'confirm'), 403, 'forbidden')
    assertProblem(await act(service, other.token, made.body.id, 'confirm'), 404, 'not-found')
    const confirmed = await act(service, market.token, made.body.id, 'confirm', { 'if-match': '"1"' })
    assert.equal(confirmed.status, 200, confirmed.text)
    assert.equal(confirmed.body.status, 'confirmed')
    assert.equal(confirmed.body.version, 2)
    const listing = await service.request('GET', `/api/v1/listing/${listingId}`, { token: provider.token })
    assert.equal(listing.body.version, 2)
    assert.equal(listing.body.status, 'sold_out')
    assert.equal(listing.body.items[0].quantity, 0)
    const again = await act(service, market.token, made.body.id, 'confirm')
    assert.equal(again.status, 200)
    assert.equal(again.body.version, 2)
    assertProblem(await act(service, market.token, made.body.id, 'release'), 409, 'reservation-closed')
    const events = (await feed(service, provider.token)).filter((e) => e.data.id === listingId || e.data.id === made.body.id).map((e) => e.type)
    assert.deepEqual(events, ['listing.created', 'reservation.held', 'listing.updated', 'reservation.confirmed'])
    // Cancel of a confirmed one by the provider: units return (sold_out → active), endedBy provider.
    const cancelled = await act(service, provider.token, made.body.id, 'cancel')
    assert.equal(cancelled.status, 200, cancelled.text)
    assert.deepEqual([cancelled.body.status, cancelled.body.endedBy, cancelled.body.version], ['cancelled', 'provider', 3])
    const back = await service.request('GET', `/api/v1/listing/${listingId}`, { token: provider.token })
    assert.deepEqual([back.body.status, back.body.version, back.body.items[0].quantity], ['active', 3, 2])
    assert.equal((await act(service, market.token, made.body.id, 'cancel')).body.version, 3, 'already ended: nothing changes')
    assertProblem(await act(service, market.token, made.body.id, 'confirm'), 409, 'reservation-closed')
    const theirs = (await feed(service, market.token)).filter((e) => e.data.id === made.body.id).map((e) => e.type)
    assert.deepEqual(theirs, ['reservation.held', 'reservation.confirmed', 'reservation.cancelled'])
  })

  test('release and cancel of a held one free the units; endedBy says who', async () => {
    const listingId = await aListing(service, provider.token, [4])
    const a = await hold(service, market.token, { listingId, referenceId: next(), items: [{ position: 0, quantity: 1 }] })
    const b = await hold(service, market.token, { listingId, referenceId: next(), items: [{ position: 0, quantity: 1 }] })
    const c = await hold(service, market.token, { listingId, referenceId: next(), items: [{ position: 0, quantity: 1 }] })
    assert.deepEqual(await availableOf(service, provider.token, listingId), [1])
    assert.deepEqual([(await act(service, market.token, a.body.id, 'release')).body.endedBy], ['marketplace'])
    assert.deepEqual([(await act(service, market.token, b.body.id, 'cancel')).body.status], ['released'])
    const byProvider = await act(service, provider.token, c.body.id, 'cancel')
    assert.deepEqual([byProvider.body.status, byProvider.body.endedBy], ['released', 'provider'])
    assert.deepEqual(await availableOf(service, provider.token, listingId), [4])
    assert.equal((await act(service, market.token, a.body.id, 'release')).body.version, 2, 'releasing again changes nothing')
    assert.equal(
      (await service.request('GET', `/api/v1/listing/${listingId}`, { token: provider.token })).body.version,
      1,
      'holds and releases leave the listing',
    )
  })

  test('expiry is exact: held until one millisecond before expiresAt, expired (version + 1) and free at it; the sweeper records it once', async () => {
    const listingId = await aListing(service, provider.token, [3])
    const made = await hold(service, market.token, { listingId, referenceId: next(), items: [{ position: 0, quantity: 3 }], holdSeconds: 30 })
    const expiresAt = Date.parse(made.body.expiresAt)
    assert.equal(expiresAt, service.clock() + 30_000)
    const start = service.clock.now
    service.clock.now = expiresAt - 1
    assert.deepEqual(await availableOf(service, market.token, listingId), [0])
    assertProblem(await hold(service, other.token, { listingId, referenceId: next(), items: [{ position: 0, quantity: 1 }] }), 409, 'insufficient-stock')
    assert.equal((await service.request('GET', `/api/v1/reservations/${made.body.id}`, { token: market.token })).body.status, 'held')
    service.clock.now = expiresAt
    assert.deepEqual(await availableOf(service, market.token, listingId), [3])
    const read = await service.request('GET', `/api/v1/reservations/${made.body.id}`, { token: provider.token })
    assert.deepEqual([read.body.status, read.body.version, read.body.updatedAt], ['expired', 2, made.body.expiresAt])
    assertProblem(await act(service, market.token, made.body.id, 'confirm'), 409, 'reservation-expired')
    assert.equal((await act(service, market.token, made.body.id, 'release')).status, 200)
    const taken = await hold(service, other.token, { listingId, referenceId: next(), items: [{ position: 0, quantity: 3 }] })
    assert.equal(taken.status, 201, taken.text)
    assert.ok((await service.recordExpiries()) >= 1)
    assert.equal(await service.recordExpiries(), 0)
    const expired = (await feed(service, market.token)).filter((e) => e.data.id === made.body.id)
    assert.deepEqual(
      expired.map((e) => [e.type, e.data.status, e.data.version]),
      [
        ['reservation.held', 'held', 1],
        ['reservation.expired', 'expired', 2],
      ],
    )
    const listed = await service.request('GET', `/api/v1/reservations?status=expired&listingId=${listingId}`, { token: market.token })
    assert.deepEqual(
      listed.body.data.map((r: any) => r.id),
      [made.body.id],
    )
    assert.deepEqual(await availableOf(service, provider.token, listingId), [0])
    service.clock.now = start
  })

  test('a hold never outlives its listing', async () => {
    const listingId = await aListing(service, provider.token, [1])
    const listing = await service.request('GET', `/api/v1/listing/${listingId}`, { token: provider.token })
    service.clock.now = listing.body.expiresAtUnix * 1000 - 60_000
    const made = await hold(service, market.token, { listingId, referenceId: next(), items: [{ position: 0, quantity: 1 }], holdSeconds: 600 })
    assert.equal(made.body.expiresAt, new Date(listing.body.expiresAtUnix * 1000).toISOString())
    service.clock.now = Date.UTC(2026, 10, 21, 12, 0, 0, 0)
  })

  test('PATCH below held is 409 naming the item with its held; to held or more works; withdraw releases the held ones', async () => {
    const listingId = await aListing(service, provider.token, [5, 5])
    const a = await hold(service, market.token, { listingId, referenceId: next(), items: [{ position: 1, quantity: 3 }] })
    const b = await hold(service, other.token, { listingId, referenceId: next(), items: [{ position: 1, quantity: 1 }] })
    const refused = assertProblem(
      await service.request('PATCH', `/api/v1/listing/${listingId}`, {
        token: provider.token,
        json: {
          items: [
            { position: 0, quantity: 0 },
            { position: 1, quantity: 3 },
          ],
        },
      }),
      409,
      'insufficient-stock',
    )
    assert.deepEqual(refused.errors, [{ pointer: '/items/1/quantity', detail: refused.errors[0].detail, held: 4 }])
    assert.equal((await service.request('GET', `/api/v1/listing/${listingId}`, { token: provider.token })).body.version, 1)
    const lowered = await service.request('PATCH', `/api/v1/listing/${listingId}`, { token: provider.token, json: { items: [{ position: 1, quantity: 4 }] } })
    assert.equal(lowered.status, 200, lowered.text)
    assert.deepEqual(await availableOf(service, market.token, listingId), [5, 0])
    const confirmed = await act(service, market.token, a.body.id, 'confirm')
    assert.equal(confirmed.status, 200)
    const withdrawn = await service.request('POST', `/api/v1/listing/${listingId}/withdraw`, { token: provider.token })
    assert.equal(withdrawn.status, 200)
    const released = await service.request('GET', `/api/v1/reservations/${b.body.id}`, { token: other.token })
    assert.deepEqual([released.body.status, released.body.endedBy, released.body.version], ['released', 'listing_withdrawn', 2])
    assert.equal((await service.request('GET', `/api/v1/reservations/${a.body.id}`, { token: market.token })).body.status, 'confirmed')
    assert.deepEqual(await availableOf(service, provider.token, listingId), [0, 0])
    assertProblem(await service.request('GET', `/api/v1/listing/${listingId}/stock`, { token: market.token }), 404, 'not-found')
    const theirs = (await feed(service, other.token)).filter((e) => e.data.id === b.body.id).map((e) => e.type)
    assert.deepEqual(theirs, ['reservation.held', 'reservation.released'])
  })

  test('holds arriving together on one listing: each decided on what the ones before left, replays and conflicts among them', async () => {
    const listingId = await aListing(service, provider.token, [10])
    const bodies = Array.from({ length: 24 }, (_, k) => ({
      listingId,
      referenceId: `together-${k % 16}`,
      items: [{ position: 0, quantity: k % 16 === 15 && k > 15 ? 2 : 1 }],
    }))
    const answers = await Promise.all(bodies.map((body, k) => hold(service, k % 2 === 0 ? market.token : other.token, body)))
    for (const answer of answers) assert.ok([200, 201, 409].includes(answer.status), answer.text)
    const made = new Set(answers.filter((a) => a.status === 201).map((a) => a.body.id))
    const replays = answers.filter((a) => a.status === 200)
    for (const replay of replays) assert.ok(made.has(replay.body.id), 'a replay answers with the reservation made')
    assert.equal(made.size, 10, answers.map((a) => a.status).join(','))
    assert.deepEqual((await stock(service, provider.token, listingId)).items[0], { position: 0, quantity: 10, held: 10, available: 0 })
    for (const answer of answers.filter((a) => a.status === 409))
      assert.ok(['/problems/insufficient-stock', '/problems/conflict'].includes(answer.body.type), answer.text)
  })

  test('reading: each side sees its own, newest first, paged with a cursor bound to the query; anyone else 404', async () => {
    const p2 = await service.newProvider()
    const m2 = await service.newMarketplace('Pager')
    const listingId = await aListing(service, p2.token, [50])
    const ids: string[] = []
    for (let k = 0; k < 5; k++) {
      service.clock.now += 1
      ids.push((await hold(service, m2.token, { listingId, referenceId: `page-${k}`, items: [{ position: 0, quantity: 1 }] })).body.id)
    }
    const first = await service.request('GET', '/api/v1/reservations?limit=2', { token: m2.token })
    assert.deepEqual(
      first.body.data.map((r: any) => r.id),
      [ids[4], ids[3]],
    )
    const second = await service.request('GET', `/api/v1/reservations?limit=2&cursor=${first.body.nextCursor}`, { token: m2.token })
    assert.deepEqual(
      second.body.data.map((r: any) => r.id),
      [ids[2], ids[1]],
    )
    const last = await service.request('GET', `/api/v1/reservations?limit=2&cursor=${second.body.nextCursor}`, { token: m2.token })
    assert.deepEqual([last.body.data.map((r: any) => r.id), last.body.nextCursor], [[ids[0]], null])
    assertProblem(
      await service.request('GET', `/api/v1/reservations?status=held&limit=2&cursor=${first.body.nextCursor}`, { token: m2.token }),
      400,
      'invalid-request',
    )
    assertProblem(await service.request('GET', '/api/v1/reservations?cursor=forged.AAAAAAAAAAAAAAAAAAAAAA', { token: m2.token }), 400, 'invalid-request')
    assertProblem(await service.request('GET', '/api/v1/reservations?status=nope&limit=0&x=1', { token: m2.token }), 400, 'invalid-request')
    const ofProvider = await service.request('GET', `/api/v1/reservations?listingId=${listingId}`, { token: p2.token })
    assert.deepEqual(
      ofProvider.body.data.map((r: any) => r.id),
      [...ids].reverse(),
    )
    assert.equal(
      (await service.request('GET', '/api/v1/reservations', { token: provider.token })).body.data.some((r: any) => ids.includes(r.id)),
      false,
    )
    assertProblem(await service.request('GET', `/api/v1/reservations/${ids[0]}`, { token: provider.token }), 404, 'not-found')
    assertProblem(await service.request('GET', `/api/v1/reservations/${ids[0]}`, { token: market.token }), 404, 'not-found')
    assertProblem(await act(service, provider.token, ids[0] as string, 'cancel'), 404, 'not-found')
    assertProblem(await service.request('GET', '/api/v1/reservations/rsv_nothing', { token: m2.token }), 404, 'not-found')
    const one = await service.request('GET', `/api/v1/reservations/${ids[0]}`, { token: p2.token })
    assert.deepEqual([one.status, one.headers.get('etag')], [200, '"1"'])
  })

  test('discovery: each entry’s available by position; a listing with nothing available is left out until a hold runs out', async () => {
    const p3 = await service.newProvider()
    const m3 = await service.newMarketplace('Finder')
    const place = { latitude: -33.86, longitude: 151.2 }
    const listingId = (await service.create(p3.token, listingBody({ location: place, items: [item(0, { quantity: 2 }), item(1, { quantity: 1 })] }))).body
      .listingId
    const discover = async () =>
      (
        await service.request('GET', `/api/v1/discover?latitude=${place.latitude}&longitude=${place.longitude}&radiusKm=1`, { token: m3.token })
      ).body.data.filter((entry: any) => entry.listing.id === listingId)
    assert.deepEqual(
      (await discover()).map((entry: any) => entry.available),
      [[2, 1]],
    )
    const a = await hold(service, m3.token, { listingId, referenceId: 'd1', items: [{ position: 0, quantity: 1 }] })
    assert.deepEqual(
      (await discover()).map((entry: any) => entry.available),
      [[1, 1]],
    )
    const b = await hold(service, m3.token, {
      listingId,
      referenceId: 'd2',
      items: [
        { position: 0, quantity: 1 },
        { position: 1, quantity: 1 },
      ],
      holdSeconds: 30,
    })
    assert.equal(b.status, 201, b.text)
    assert.deepEqual(await discover(), [])
    const start = service.clock.now
    service.clock.now = Date.parse(b.body.expiresAt)
    assert.deepEqual(
      (await discover()).map((entry: any) => entry.available),
      [[1, 1]],
    )
    service.clock.now = start
    assert.equal((await act(service, m3.token, a.body.id, 'release')).status, 200)
    assert.deepEqual(
      (await discover()).map((entry: any) => entry.available),
      [[1, 0]],
    )
    // A confirm of the rest sells it out: it leaves discovery as any sold-out listing does.
    assert.equal((await act(service, m3.token, b.body.id, 'confirm')).status, 200)
    const c = await hold(service, m3.token, { listingId, referenceId: 'd3', items: [{ position: 0, quantity: 1 }] })
    assert.equal(c.status, 201, c.text)
    assert.deepEqual(await discover(), [])
  })
})
