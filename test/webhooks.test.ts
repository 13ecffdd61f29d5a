import assert from 'node:assert/strict'
import { test } from 'node:test'
import { hasBidiControls, visibleUrl } from '../src/webhooks/bidi-controls.js'
import { describeEachDialect, type TestService } from './helper.js'
import { assertProblem } from './http-support.js'

// docs/api.md#webhooks: a provider's or a marketplace's webhook endpoints (deliveries: webhook-delivery.test.ts).

const SECRET_SHAPE = /^whsec_[A-Za-z0-9+/]+={0,2}$/
const ID_SHAPE = /^wh_[0-9A-HJKMNP-TV-Z]{26}$/
const ALL_TYPES = [
  'listing.created',
  'listing.updated',
  'listing.withdrawn',
  'listing.expired',
  'reservation.held',
  'reservation.confirmed',
  'reservation.released',
  'reservation.expired',
  'reservation.cancelled',
]

const createEndpoint = (service: TestService, token: string, body: unknown) => service.request('POST', '/api/v1/webhooks', { token, json: body })

/** The pointers (or parameters) a 400 names. */
function namedIn(response: { status: number; text: string; body: any }): string[] {
  assertProblem(response as never, 400, 'invalid-request')
  return response.body.errors.map((error: { pointer?: string; parameter?: string }) => error.pointer ?? error.parameter)
}

await describeEachDialect('webhook endpoints', (service) => {
  test('create: 201 with id, url, events, enabled, createdAt and a secret of 32 random bytes shown only then', async () => {
    const { token } = await service.newProvider()
    const created = await createEndpoint(service, token, { url: 'https://pos.example.com/hooks?shop=7', events: ['listing.updated', 'listing.created'] })
    assert.equal(created.status, 201, created.text)
    const { secret, ...endpoint } = created.body
    assert.match(endpoint.id, ID_SHAPE)
    assert.deepEqual(endpoint, {
      id: endpoint.id,
      url: 'https://pos.example.com/hooks?shop=7',
      // In the order of the event types, whatever order they were asked for.
      events: ['listing.created', 'listing.updated'],
      status: 'enabled',
      disabledReason: null,
      createdAt: new Date(service.clock()).toISOString(),
    })
    assert.match(secret, SECRET_SHAPE)
    assert.equal(Buffer.from(secret.slice('whsec_'.length), 'base64').length, 32)

    const read = await service.request('GET', `/api/v1/webhooks/${endpoint.id}`, { token })
    assert.deepEqual(read.body, endpoint)
    const listed = await service.request('GET', '/api/v1/webhooks', { token })
    assert.deepEqual(listed.body, { data: [endpoint] })
    assert.ok(!read.text.includes(secret) && !listed.text.includes(secret))

    const second = await createEndpoint(service, token, { url: 'http://hooks.example.net/all' })
    assert.deepEqual([second.status, second.body.events], [201, ALL_TYPES])
    assert.notEqual(second.body.secret, secret)
  })

  test('create refuses a bad body, naming every bad field; nothing is created', async () => {
    const { token } = await service.newProvider()
    const cases: Array<[body: unknown, named: string[]]> = [
      [{}, ['/url']],
      [{ url: 'ftp://example.com/x' }, ['/url']],
      [{ url: 'https://user:pw@example.com/x' }, ['/url']],
      [{ url: '/relative' }, ['/url']],
      [{ url: `https://example.com/${'x'.repeat(2048)}` }, ['/url']],
      [{ url: 42 }, ['/url']],
      [{ url: 'https://example.com', events: [] }, ['/events']],
      [{ url: 'https://example.com', events: ['listing.sold'] }, ['/events/0']],
      [{ url: 'https://example.com', events: ['listing.created', 'listing.created'] }, ['/events']],
      [{ url: 'https://example.com', events: 'listing.created' }, ['/events']],
      [{ url: 'https://example.com', secret: 'mine' }, ['/secret']],
      [{ url: 'nope', events: [1], extra: true }, ['/url', '/events/0', '/extra']],
    ]
    for (const [body, named] of cases) {
      const response = await createEndpoint(service, token, body)
      assert.deepEqual(namedIn(response).sort(), [...named].sort(), JSON.stringify(body))
    }
    assert.deepEqual((await service.request('GET', '/api/v1/webhooks', { token })).body, { data: [] })
  })

  test('an address literal the image policy forbids is refused as /url; a host name is accepted (checked at each attempt)', async () => {
    const { token } = await service.newProvider()
    for (const host of ['127.0.0.1', '10.0.0.7', '169.254.169.254', '[::1]', '[::ffff:127.0.0.1]', '0.0.0.0', '100.64.0.1', '2130706433']) {
      const response = await createEndpoint(service, token, { url: `http://${host}/hooks` })
      assert.deepEqual(namedIn(response), ['/url'], host)
    }
    assert.equal((await createEndpoint(service, token, { url: 'http://localhost:9/hooks' })).status, 201)
  })

  test('a URL holding a bidirectional control character is refused as /url, nothing stored; other Unicode is kept as sent', async () => {
    const { token } = await service.newProvider()
    const controls = ['\u061C', '\u200E', '\u200F', '\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069']
    for (const control of controls) {
      for (const url of [`https://pos.example.com/hook?${control}moc.knab`, `https://pos.example.com/${control}x`, `https://pos.example.com/x#${control}`]) {
        const response = await createEndpoint(service, token, { url })
        assert.deepEqual(namedIn(response), ['/url'], JSON.stringify(url))
        assert.match(response.body.errors[0].detail, /bidirectional control characters/)
      }
      assert.deepEqual(namedIn(await createEndpoint(service, token, { url: `https://pos${control}.example.com/` })), ['/url'])
    }
    assert.deepEqual((await service.request('GET', '/api/v1/webhooks', { token })).body, { data: [] })
    const url = 'https://pos.example.com/hook?q=<a>"b"&name=مخبز'
    const kept = await createEndpoint(service, token, { url })
    assert.equal(kept.status, 201, kept.text)
    assert.equal(kept.body.url, url)
  })

  /** Every route that names an endpoint: each is 404 for one that is not the caller's. */
  async function assertNotFoundEverywhere(token: string, webhookId: string) {
    for (const [method, suffix] of [
      ['GET', ''],
      ['DELETE', ''],
      ['POST', '/rotate-secret'],
      ['POST', '/enable'],
      ['GET', '/deliveries'],
    ]) {
      const response = await service.request(method as string, `/api/v1/webhooks/${webhookId}${suffix}`, { token })
      assertProblem(response, 404, 'not-found')
    }
  }

  test('another provider’s endpoint is 404 on every route, as unknown and malformed ids are', async () => {
    const owner = await service.newProvider()
    const other = await service.newProvider()
    const { id } = (await createEndpoint(service, owner.token, { url: 'https://example.com/h' })).body
    for (const webhookId of [id, `wh_${'0'.repeat(26)}`, 'nope', 'wh_%00', encodeURIComponent('wh_é')]) await assertNotFoundEverywhere(other.token, webhookId)
    assert.deepEqual((await service.request('GET', '/api/v1/webhooks', { token: other.token })).body, { data: [] })
    assert.equal((await service.request('GET', `/api/v1/webhooks/${id}`, { token: owner.token })).status, 200)
  })

  test('a marketplace manages endpoints of its own: every route; a provider’s and another marketplace’s are 404 to it, and its own to them', async () => {
    const marketplace = await service.newMarketplace()
    const other = await service.newMarketplace()
    const provider = await service.newProvider()
    const created = await createEndpoint(service, marketplace.token, { url: 'https://deals.example.com/hooks', events: ['reservation.held'] })
    assert.equal(created.status, 201, created.text)
    const { secret, ...endpoint } = created.body
    assert.match(secret, SECRET_SHAPE)
    assert.deepEqual([endpoint.events, endpoint.status], [['reservation.held'], 'enabled'])
    const everything = await createEndpoint(service, marketplace.token, { url: 'https://deals.example.com/all' })
    assert.deepEqual(everything.body.events, ALL_TYPES)
    const providers = (await createEndpoint(service, provider.token, { url: 'https://pos.example.com/h' })).body

    const token = marketplace.token
    assert.deepEqual((await service.request('GET', `/api/v1/webhooks/${endpoint.id}`, { token })).body, endpoint)
    assert.deepEqual(
      (await service.request('GET', '/api/v1/webhooks', { token })).body.data.map((one: { id: string }) => one.id).sort(),
      [endpoint.id, everything.body.id].sort(),
    )
    const rotated = await service.request('POST', `/api/v1/webhooks/${endpoint.id}/rotate-secret`, { token })
    assert.equal(rotated.status, 200, rotated.text)
    assert.notEqual(rotated.body.secret, secret)
    assert.deepEqual((await service.request('POST', `/api/v1/webhooks/${endpoint.id}/enable`, { token })).body, endpoint)
    assert.deepEqual((await service.request('GET', `/api/v1/webhooks/${endpoint.id}/deliveries`, { token })).body, { data: [] })

    await assertNotFoundEverywhere(token, providers.id)
    await assertNotFoundEverywhere(provider.token, endpoint.id)
    await assertNotFoundEverywhere(other.token, endpoint.id)
    for (const stranger of [provider.token, other.token]) {
      const theirs = (await service.request('GET', '/api/v1/webhooks', { token: stranger })).body.data.map((one: { id: string }) => one.id)
      assert.ok(!theirs.includes(endpoint.id))
    }
    assert.equal((await service.request('DELETE', `/api/v1/webhooks/${endpoint.id}`, { token })).status, 204)
    assertProblem(await service.request('GET', `/api/v1/webhooks/${endpoint.id}`, { token }), 404, 'not-found')
    assert.equal((await service.request('GET', `/api/v1/webhooks/${providers.id}`, { token: provider.token })).status, 200)
  })

  test('discovery stays marketplace-only and listings provider-only (403), while the feed and webhooks take both', async () => {
    const marketplace = await service.newMarketplace()
    const provider = await service.newProvider()
    assertProblem(await service.request('GET', '/api/v1/listing', { token: marketplace.token }), 403, 'forbidden')
    assertProblem(await service.request('GET', '/api/v1/discover?latitude=1&longitude=1', { token: provider.token }), 403, 'forbidden')
    for (const token of [marketplace.token, provider.token]) {
      assert.equal((await service.request('GET', '/api/v1/events', { token })).status, 200)
      assert.equal((await service.request('GET', '/api/v1/webhooks', { token })).status, 200)
    }
  })

  test('delete: 204, then 404; rotate: a new secret each time; enable on an enabled endpoint changes nothing', async () => {
    const { token } = await service.newProvider()
    const created = (await createEndpoint(service, token, { url: 'https://example.com/h' })).body
    const first = await service.request('POST', `/api/v1/webhooks/${created.id}/rotate-secret`, { token })
    assert.equal(first.status, 200, first.text)
    assert.deepEqual(Object.keys(first.body), ['secret'])
    assert.match(first.body.secret, SECRET_SHAPE)
    const second = await service.request('POST', `/api/v1/webhooks/${created.id}/rotate-secret`, { token })
    assert.ok(new Set([created.secret, first.body.secret, second.body.secret]).size === 3)
    const enabled = await service.request('POST', `/api/v1/webhooks/${created.id}/enable`, { token })
    const { secret: _, ...view } = created
    assert.deepEqual(enabled.body, view)

    const deleted = await service.request('DELETE', `/api/v1/webhooks/${created.id}`, { token })
    assert.equal(deleted.status, 204)
    assert.equal(deleted.text, '')
    assertProblem(await service.request('GET', `/api/v1/webhooks/${created.id}`, { token }), 404, 'not-found')
    assertProblem(await service.request('DELETE', `/api/v1/webhooks/${created.id}`, { token }), 404, 'not-found')
  })

  for (const kind of ['provider', 'marketplace'] as const) {
    test(`at most 10 per ${kind}, also when 15 creates race: the rest are 409; a delete makes room`, async () => {
      const { token } = kind === 'provider' ? await service.newProvider() : await service.newMarketplace()
      const answers = await Promise.all(Array.from({ length: 15 }, (_, i) => createEndpoint(service, token, { url: `https://example.com/${i}` })))
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [...Array(10).fill(201), ...Array(5).fill(409)])
      for (const refused of answers.filter((answer) => answer.status === 409)) assertProblem(refused, 409, 'conflict')
      const listed = (await service.request('GET', '/api/v1/webhooks', { token })).body.data
      assert.equal(listed.length, 10)
      await service.request('DELETE', `/api/v1/webhooks/${listed[0].id}`, { token })
      assert.equal((await createEndpoint(service, token, { url: 'https://example.com/again' })).status, 201)
      // Another provider and another marketplace have their own ten.
      assert.equal((await createEndpoint(service, (await service.newProvider()).token, { url: 'https://example.com/x' })).status, 201)
      assert.equal((await createEndpoint(service, (await service.newMarketplace()).token, { url: 'https://example.com/x' })).status, 201)
    })
  }

  test('the delivery log’s limit is strict, as every query parameter is', async () => {
    const { token } = await service.newProvider()
    const { id } = (await createEndpoint(service, token, { url: 'https://example.com/h' })).body
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'limit=', 'limit=1&limit=2', 'after=1']) {
      const response = await service.request('GET', `/api/v1/webhooks/${id}/deliveries?${query}`, { token })
      assert.equal(namedIn(response).length, 1, query)
    }
    assert.deepEqual((await service.request('GET', `/api/v1/webhooks/${id}/deliveries?limit=100`, { token })).body, { data: [] })
  })
})

await describeEachDialect(
  'webhook endpoints with WEBHOOK_ALLOW_PRIVATE_NETWORKS=true',
  (service) => {
    test('loopback and private literals are accepted (development and tests)', async () => {
      const { token } = await service.newProvider()
      for (const host of ['127.0.0.1:8080', '10.0.0.7', '[::1]']) {
        assert.equal((await createEndpoint(service, token, { url: `http://${host}/hooks` })).status, 201, host)
      }
    })
  },
  { env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } },
)

test('bidirectional controls: found anywhere in a text, and shown percent-encoded', () => {
  for (const control of ['\u061C', '\u200E', '\u200F', '\u202A', '\u202E', '\u2066', '\u2069']) {
    assert.equal(hasBidiControls(`https://a.example/${control}`), true, JSON.stringify(control))
  }
  for (const other of ['https://a.example/', 'https://a.example/مخبز', '\u200D', '\u2065', '\u202F', '\u061B']) {
    assert.equal(hasBidiControls(other), false, JSON.stringify(other))
  }
  assert.equal(visibleUrl('https://a.example/?\u202Ex\u200F'), 'https://a.example/?%E2%80%AEx%E2%80%8F')
  assert.equal(visibleUrl('https://a.example/مخبز'), 'https://a.example/مخبز')
})
