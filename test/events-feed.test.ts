import { jobDatabase } from '../src/db/connection.js'
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { pruneEvents } from '../src/events/retention.js'
import { listingBody } from './fixtures.js'
import { describeEachDialect, type TestService } from './helper.js'
import { assertProblem } from './http-support.js'
import { marketplaceOwner, providerOwner, recordFor, reservationData, reservationEvent } from './owner-events.js'

// docs/api.md#events: every change commits its event; the feed yields an owner's events (a provider's or a
// marketplace's) once each, in commit order.

const feed = (service: TestService, token: string, query = '') => service.request('GET', `/api/v1/events${query}`, { token })

/** Follows nextCursor from `after` to the end: every event after it. */
async function readAll(service: TestService, token: string, after?: string, limit = 100): Promise<any[]> {
  const events: any[] = []
  let cursor = after
  for (;;) {
    const query = new URLSearchParams({ limit: String(limit), ...(cursor ? { after: cursor } : {}) })
    const page = await feed(service, token, `?${query}`)
    assert.equal(page.status, 200, page.text)
    if (page.body.data.length === 0) {
      assert.equal(page.body.nextCursor, null)
      return events
    }
    assert.equal(page.body.nextCursor, page.body.data.at(-1).id)
    events.push(...page.body.data)
    cursor = page.body.nextCursor
  }
}

await describeEachDialect('event feed', (service) => {
  test('a listing’s life, in order: created, updated, withdrawn; each event’s data is the listing right after it', async () => {
    const provider = await service.newProvider({ industry: 'grocer' })
    const created = await service.create(provider.token, listingBody({}, 2))
    const id = created.body.listingId
    service.clock.now += 1000
    const patched = await service.request('PATCH', `/api/v1/listing/${id}`, { token: provider.token, json: { items: [{ position: 1, quantity: 0 }] } })
    service.clock.now += 1000
    const withdrawn = await service.request('POST', `/api/v1/listing/${id}/withdraw`, { token: provider.token })
    const events = await readAll(service, provider.token)
    assert.deepEqual(
      events.map((event) => [event.type, event.data.version, event.data.status]),
      [
        ['listing.created', 1, 'active'],
        ['listing.updated', 2, 'active'],
        ['listing.withdrawn', 3, 'withdrawn'],
      ],
    )
    const read = (await service.request('GET', `/api/v1/listing/${id}`, { token: provider.token })).body
    assert.equal(events[0].data.id, id)
    assert.equal(events[0].data.brand.industry, 'grocer')
    assert.equal(events[0].data.items[1].quantity, 1)
    assert.deepEqual(events[1].data, patched.body)
    assert.deepEqual(events[2].data, withdrawn.body)
    assert.deepEqual(events[2].data, read)
    for (const event of events) {
      assert.match(event.id, /^evt_[0-9A-Z]{26}$/)
      assert.equal(event.createdAt, event.data.updatedAt)
    }
    assert.equal(new Set(events.map((event) => event.id)).size, 3)
    // Nothing after the last one, until something happens.
    const empty = await feed(service, provider.token, `?after=${events[2].id}`)
    assert.deepEqual(empty.body, { data: [], nextCursor: null })
  })

  test('expiry: one listing.expired event per listing once recorded, with version + 1; withdrawn listings get none', async () => {
    const provider = await service.newProvider()
    const ids: string[] = []
    for (let i = 0; i < 3; i++) ids.push((await service.create(provider.token, listingBody({}, 1))).body.listingId)
    await service.request('POST', `/api/v1/listing/${ids[2]}/withdraw`, { token: provider.token })
    const seen = (await readAll(service, provider.token)).at(-1).id
    service.clock.now += service.config.LISTING_TTL_TIMED_SECONDS * 1000 + 1
    // Recorded by as many sweeps as run, in any number at once: each expiry once.
    await Promise.all([service.recordExpiries(), service.recordExpiries(), service.recordExpiries()])
    await service.recordExpiries()
    const expired = await readAll(service, provider.token, seen)
    assert.deepEqual(
      expired.map((event) => [event.type, event.data.id, event.data.version, event.data.status]).sort(),
      [
        ['listing.expired', ids[0], 2, 'expired'],
        ['listing.expired', ids[1], 2, 'expired'],
      ].sort(),
    )
    for (const event of expired) assert.equal(event.data.updatedAt, new Date(event.data.expiresAtUnix * 1000).toISOString())
  })

  test('retention: events older than EVENT_RETENTION_DAYS go, with the deliveries they owed and the log of that age', async () => {
    const { token } = await service.newProvider()
    const endpoint = await service.request('POST', '/api/v1/webhooks', { token, json: { url: 'https://hooks.example.com/x' } })
    assert.equal(endpoint.status, 201, endpoint.text)
    assert.equal((await service.create(token, listingBody())).status, 201)
    const [old] = (await service.request('GET', '/api/v1/events', { token })).body.data
    const dayMs = 24 * 3600 * 1000
    service.clock.now += (service.config.EVENT_RETENTION_DAYS - 1) * dayMs
    assert.equal((await service.create(token, listingBody())).status, 201)
    const owed = async () =>
      Number(
        (
          await service.database.kysely
            .selectFrom('webhook_deliveries')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('endpoint_id', '=', endpoint.body.id)
            .executeTakeFirst()
        )?.n,
      )
    assert.equal(await owed(), 2)
    // The log: one attempt as old as the first event, one as recent as the second.
    const attempt = { endpoint_id: endpoint.body.id, event_id: old.id, event_type: 'listing.created', attempt: 1, outcome: 'failed' as const, duration_ms: 1 }
    const ownerId = (
      await service.database.kysely.selectFrom('webhook_endpoints').select('owner_id').where('id', '=', endpoint.body.id).executeTakeFirstOrThrow()
    ).owner_id
    await service.database.writer
      .insertInto('webhook_attempts')
      .values([
        { ...attempt, owner_id: ownerId, at_ms: Date.parse(old.createdAt), response_status: null, error: null },
        { ...attempt, owner_id: ownerId, at_ms: service.clock(), response_status: null, error: null },
      ])
      .execute()

    service.clock.now += 2 * dayMs
    // Earlier tests' events on this service are as old: they go too.
    const pruned = await pruneEvents(jobDatabase(service.database), { beforeMs: service.clock() - service.config.EVENT_RETENTION_DAYS * dayMs, limit: 1000 })
    assert.ok(pruned >= 1)
    const kept = (await service.request('GET', '/api/v1/events', { token })).body.data
    assert.equal(kept.length, 1)
    assert.notEqual(kept[0].id, old.id)
    assert.equal(await owed(), 1)
    const log = await service.database.kysely.selectFrom('webhook_attempts').select('at_ms').where('endpoint_id', '=', endpoint.body.id).execute()
    assert.equal(log.length, 1)
    assert.ok(log[0] && log[0].at_ms > Date.parse(old.createdAt))
    const after = await service.request('GET', `/api/v1/events?after=${old.id}`, { token })
    assertProblem(after, 400, 'invalid-request')
    assert.deepEqual(
      after.body.errors.map((error: { parameter: string }) => error.parameter),
      ['after'],
    )
  })

  test('pages: limit bounds each page, nextCursor continues it, nothing repeats', async () => {
    const provider = await service.newProvider()
    for (let i = 0; i < 12; i++) assert.equal((await service.create(provider.token, listingBody())).status, 201)
    const first = await feed(service, provider.token, '?limit=5')
    assert.equal(first.body.data.length, 5)
    const all = await readAll(service, provider.token, undefined, 5)
    assert.equal(all.length, 12)
    assert.deepEqual(all.slice(0, 5), first.body.data)
    assert.equal(new Set(all.map((event) => event.id)).size, 12)
    assert.equal((await feed(service, provider.token)).body.data.length, 12) // default limit 50
  })

  test('only the caller’s events; another provider’s event id as after → 400 naming after', async () => {
    const one = await service.newProvider()
    const other = await service.newProvider()
    await service.create(one.token, listingBody())
    await service.create(other.token, listingBody())
    const mine = await readAll(service, one.token)
    assert.equal(mine.length, 1)
    const problem = assertProblem(await feed(service, other.token, `?after=${mine[0].id}`), 400, 'invalid-request')
    assert.deepEqual(
      problem.errors.map((error: any) => error.parameter),
      ['after'],
    )
  })

  test('a marketplace reads its own stream: its reservation events in order, data as stored; no one else’s, and no one else reads it', async () => {
    const provider = await service.newProvider()
    const marketplace = await service.newMarketplace('Deals App')
    const other = await service.newMarketplace('Other App')
    const listingId = (await service.create(provider.token, listingBody())).body.listingId
    const held = reservationData({ id: marketplace.id, name: 'Deals App' }, provider.id, { listingId })
    const confirmed = { ...held, status: 'confirmed', version: 2, updatedAt: '2026-11-27T18:01:00.000Z' }
    // One reservation's change goes to both streams: the provider's first, then the marketplace's.
    const both = async (event: ReturnType<typeof reservationEvent>) => {
      await recordFor(service.database, providerOwner(provider.id), service.clock(), [event])
      await recordFor(service.database, marketplaceOwner(marketplace.id), service.clock(), [event])
    }
    await both(reservationEvent('reservation.held', held))
    service.clock.now += 60_000
    await both(reservationEvent('reservation.confirmed', confirmed))

    const mine = await readAll(service, marketplace.token)
    assert.deepEqual(
      mine.map((event) => [event.type, event.data]),
      [
        ['reservation.held', held],
        ['reservation.confirmed', confirmed],
      ],
    )
    for (const event of mine) assert.match(event.id, /^evt_[0-9A-Z]{26}$/)
    assert.equal(mine[1].createdAt, new Date(service.clock()).toISOString())
    // The provider's stream holds its listing's event and the same reservation events, as events of its own.
    const providers = await readAll(service, provider.token)
    assert.deepEqual(
      providers.map((event) => [event.type, event.data.id]),
      [
        ['listing.created', listingId],
        ['reservation.held', held.id],
        ['reservation.confirmed', held.id],
      ],
    )
    assert.deepEqual(providers[2].data, confirmed)
    assert.equal(new Set([...mine, ...providers].map((event) => event.id)).size, 5)
    // Another marketplace's stream is its own: empty. Nobody's cursor works in another's stream.
    assert.deepEqual((await feed(service, other.token)).body, { data: [], nextCursor: null })
    for (const [token, foreign] of [
      [other.token, mine[0].id],
      [provider.token, mine[0].id],
      [marketplace.token, providers[0].id],
    ]) {
      const problem = assertProblem(await feed(service, token, `?after=${foreign}`), 400, 'invalid-request')
      assert.deepEqual(
        problem.errors.map((error: any) => error.parameter),
        ['after'],
      )
    }
    const counter = await service.database.kysely.selectFrom('marketplaces').select('event_count').where('id', '=', marketplace.id).executeTakeFirstOrThrow()
    assert.equal(counter.event_count, 2)
  })

  test('a marketplace’s stream is exact under concurrent writers: a reader polling throughout sees every event once, in seq order', async () => {
    const provider = await service.newProvider()
    const marketplace = await service.newMarketplace()
    const reservations = Array.from({ length: 6 }, () => reservationData({ id: marketplace.id, name: 'marketplace' }, provider.id))
    let writing = true
    const seen: any[] = []
    const reader = (async () => {
      let after: string | undefined
      while (writing || after === undefined) {
        const page = await feed(service, marketplace.token, after ? `?after=${after}&limit=7` : '?limit=7')
        assert.equal(page.status, 200, page.text)
        seen.push(...page.body.data)
        after = page.body.nextCursor ?? after
        if (!writing && after !== undefined) break
      }
      return after
    })()
    // Each reservation's changes in order, two events a transaction; the reservations at once, so their
    // transactions commit in some order.
    await Promise.all(
      reservations.map(async (held) => {
        for (let version = 1; version <= 6; version += 2) {
          const events = [version, version + 1].map((v) => reservationEvent('reservation.held', { ...held, version: v }))
          await recordFor(service.database, marketplaceOwner(marketplace.id), service.clock(), events)
        }
      }),
    )
    writing = false
    seen.push(...(await readAll(service, marketplace.token, await reader)))
    const all = await readAll(service, marketplace.token)
    assert.equal(all.length, 6 * 6)
    assert.deepEqual(
      seen.map((event) => event.id),
      all.map((event) => event.id),
    )
    const versions = new Map<string, number>()
    for (const event of all) {
      assert.equal(event.data.version, (versions.get(event.data.id) ?? 0) + 1, `${event.data.id}: version ${event.data.version}`)
      versions.set(event.data.id, event.data.version)
    }
  })

  test('events of an owner that does not exist are refused, and nothing is written', async () => {
    const data = reservationData({ id: 'mkt_none', name: 'none' }, 'prv_none')
    const count = async () =>
      Number(
        (
          await service.database.kysely
            .selectFrom('events')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      )
    const before = await count()
    for (const owner of [marketplaceOwner('mkt_none'), providerOwner('prv_none')]) {
      await assert.rejects(recordFor(service.database, owner, service.clock(), [reservationEvent('reservation.held', data)]), /does not exist/)
    }
    assert.equal(await count(), before)
  })

  test('retention removes a marketplace’s old events as it does a provider’s', async () => {
    const provider = await service.newProvider()
    const marketplace = await service.newMarketplace()
    const data = reservationData({ id: marketplace.id, name: 'marketplace' }, provider.id)
    await recordFor(service.database, marketplaceOwner(marketplace.id), service.clock(), [reservationEvent('reservation.held', data)])
    const dayMs = 24 * 3600 * 1000
    service.clock.now += service.config.EVENT_RETENTION_DAYS * dayMs + 1
    await recordFor(service.database, marketplaceOwner(marketplace.id), service.clock(), [reservationEvent('reservation.released', { ...data, version: 2 })])
    await pruneEvents(jobDatabase(service.database), { beforeMs: service.clock() - service.config.EVENT_RETENTION_DAYS * dayMs, limit: 1000 })
    assert.deepEqual(
      (await readAll(service, marketplace.token)).map((event) => event.type),
      ['reservation.released'],
    )
  })

  const badQueries: Array<[string, string]> = [
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    ['?limit=1.5', 'limit'],
    ['?limit=', 'limit'],
    ['?limit=5&limit=5', 'limit'],
    ['?after=', 'after'],
    ['?after=evt_unknown', 'after'],
    ['?after=%00', 'after'],
    [`?after=${'x'.repeat(101)}`, 'after'],
    ['?after=a&after=b', 'after'],
    ['?cursor=x', 'cursor'],
  ]
  for (const [query, parameter] of badQueries) {
    test(`refuses ${query.slice(0, 40)} naming ${parameter}`, async () => {
      const provider = await service.newProvider()
      const problem = assertProblem(await feed(service, provider.token, query), 400, 'invalid-request')
      assert.deepEqual(
        problem.errors.map((error: any) => error.parameter),
        [parameter],
      )
    })
  }

  test('exact under concurrent writers: a reader polling throughout sees every event once, in seq order', async () => {
    const provider = await service.newProvider()
    const ids: string[] = []
    for (let i = 0; i < 4; i++) ids.push((await service.create(provider.token, listingBody({}, 2))).body.listingId)
    let writing = true
    const seen: any[] = []
    const reader = (async () => {
      let after: string | undefined
      while (writing || after === undefined || seen.length === 0) {
        const query = after ? `?after=${after}&limit=7` : '?limit=7'
        const page = await feed(service, provider.token, query)
        assert.equal(page.status, 200, page.text)
        seen.push(...page.body.data)
        after = page.body.nextCursor ?? after
        if (!writing) break
      }
      return after
    })()
    // Creates and changes of different listings of one provider, at once: they commit in some order.
    const writes = []
    for (let round = 0; round < 10; round++) {
      writes.push(service.create(provider.token, listingBody()))
      for (const [k, id] of ids.entries()) {
        writes.push(
          service.request('PATCH', `/api/v1/listing/${id}`, { token: provider.token, json: { items: [{ position: 0, quantity: round * 10 + k + 2 }] } }),
        )
      }
    }
    for (const answer of await Promise.all(writes)) assert.ok([200, 201].includes(answer.status), answer.text)
    writing = false
    const last = await reader
    seen.push(...(await readAll(service, provider.token, last)))
    const all = await readAll(service, provider.token)
    assert.equal(all.length, 4 + 10 + 40)
    assert.deepEqual(
      seen.map((event) => event.id),
      all.map((event) => event.id),
    )
    // Per listing, versions follow the feed's order.
    const versions = new Map<string, number>()
    for (const event of all) {
      const before = versions.get(event.data.id) ?? 0
      assert.equal(event.data.version, before + 1, `${event.data.id}: version ${event.data.version} after ${before}`)
      versions.set(event.data.id, event.data.version)
    }
  })
})
