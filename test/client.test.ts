import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import { createListingClient, ProblemError, unwrap, type ListingClient, type paths } from '../clients/typescript/index.js'
import { clientFiles, DOCUMENT_FILE, TYPES_FILE } from '../scripts/generate-client.js'
import { join } from 'node:path'
import { fixtureImages, listingBody } from './fixtures.js'
import { startService, type TestService } from './helper.js'
import { phonePhoto } from './image-files.js'
import { cleanEnv, ROOT, run } from './process.js'

/** A create's body as the client types it; the fixtures build one as a plain object. */
type CreateBody = paths['/api/v1/listing/create']['post']['requestBody']['content']['application/json']
const createBody = (items = 1) => listingBody({}, items) as CreateBody

// Issue 16: a typed TypeScript client generated from /openapi.json (clients/typescript/), kept in step with the
// service, and every operation of the document called through it against the running service.

test('the client is generated from the current document: `npm run client:generate` has nothing to change', async () => {
  const { document, types } = await clientFiles()
  const stale = 'clients/typescript is stale: run `npm run client:generate` and commit the result'
  assert.equal(readFileSync(DOCUMENT_FILE, 'utf8'), document, stale)
  assert.equal(readFileSync(TYPES_FILE, 'utf8'), types, stale)
})

describe('the typed client against the running service', () => {
  const service = {} as TestService
  let client: ListingClient
  /** "METHOD /path/{template}" of every call the client made. */
  const called = new Set<string>()

  before(async () => {
    Object.assign(service, await startService('sqlite'))
    const { token } = await service.newProvider({ industry: 'bakery' })
    client = createListingClient({ baseUrl: service.baseUrl, token })
    client.use({
      onRequest({ request, schemaPath }) {
        called.add(`${request.method} ${schemaPath}`)
        return request
      },
    })
  })
  after(async () => {
    await service.close?.()
  })

  test('a listing’s life, every call typed: create, list, read, change, withdraw, events', async () => {
    const body = createBody(2)
    const created = await unwrap(client.POST('/api/v1/listing/create', { body }))
    assert.equal(created.success, true)
    const listingId = created.listingId
    const replayed = await client.POST('/api/v1/listing/create', { body })
    assert.equal(replayed.response.status, 200)

    const page = await unwrap(client.GET('/api/v1/listing', { params: { query: { page: 1, limit: 10 } } }))
    assert.equal(page.content[0]?.id, listingId)
    const etag = (await client.GET('/api/v1/listing', {})).response.headers.get('etag') as string
    const unchanged = await client.GET('/api/v1/listing', { params: { header: { 'if-none-match': etag } } })
    assert.equal(unchanged.response.status, 304)

    const read = await unwrap(client.GET('/api/v1/listing/{listingId}', { params: { path: { listingId } } }))
    assert.equal(read.version, 1)
    assert.equal(read.brand.industry, 'bakery')
    const byReference = await unwrap(client.GET('/api/v1/listing/by-reference/{referenceId}', { params: { path: { referenceId: body.referenceId } } }))
    assert.deepEqual(byReference, read)

    const changed = await unwrap(
      client.PATCH('/api/v1/listing/{listingId}', {
        params: { path: { listingId }, header: { 'if-match': '"1"' } },
        body: { listingDetails: { discountRate: 0.6 }, items: [{ position: 0, quantity: 0 }] },
      }),
    )
    assert.deepEqual([changed.version, changed.listingDetails.discountRate, changed.items[0]?.quantity], [2, 0.6, 0])
    const withdrawn = await unwrap(client.POST('/api/v1/listing/{listingId}/withdraw', { params: { path: { listingId } } }))
    assert.equal(withdrawn.status, 'withdrawn')

    const events = await unwrap(client.GET('/api/v1/events', { params: { query: { limit: 10 } } }))
    assert.deepEqual(
      events.data.map((event) => event.type),
      ['listing.created', 'listing.updated', 'listing.withdrawn'],
    )
    const next = await unwrap(client.GET('/api/v1/events', { params: { query: { after: events.nextCursor as string } } }))
    assert.deepEqual(next, { data: [], nextCursor: null })
  })

  test('webhook endpoints, every call typed: create, list, read, rotate, enable, deliveries, delete', async () => {
    const created = await unwrap(client.POST('/api/v1/webhooks', { body: { url: 'https://pos.example.com/hooks', events: ['listing.withdrawn'] } }))
    assert.match(created.secret, /^whsec_/)
    const webhookId = created.id
    const path = { params: { path: { webhookId } } }
    assert.deepEqual(
      (await unwrap(client.GET('/api/v1/webhooks', {}))).data.map((endpoint) => endpoint.id),
      [webhookId],
    )
    const read = await unwrap(client.GET('/api/v1/webhooks/{webhookId}', path))
    assert.deepEqual([read.events, read.status, read.disabledReason], [['listing.withdrawn'], 'enabled', null])
    const rotated = await unwrap(client.POST('/api/v1/webhooks/{webhookId}/rotate-secret', path))
    assert.notEqual(rotated.secret, created.secret)
    assert.equal((await unwrap(client.POST('/api/v1/webhooks/{webhookId}/enable', path))).status, 'enabled')
    const log = await unwrap(client.GET('/api/v1/webhooks/{webhookId}/deliveries', { params: { path: { webhookId }, query: { limit: 5 } } }))
    assert.deepEqual(log.data, [])
    assert.equal((await client.DELETE('/api/v1/webhooks/{webhookId}', path)).response.status, 204)
    const gone = await client.GET('/api/v1/webhooks/{webhookId}', path)
    assert.equal(gone.error?.type, '/problems/not-found')
  })

  test('problems are typed errors: the Problem body by status, or a ProblemError from unwrap()', async () => {
    const invalid = await client.PATCH('/api/v1/listing/{listingId}', {
      params: { path: { listingId: '0'.repeat(26) } },
      body: { items: [{ position: 0, quantity: -1 }] },
    })
    assert.equal(invalid.response.status, 400)
    assert.equal(invalid.error?.type, '/problems/invalid-request')
    assert.equal(invalid.error?.errors?.[0]?.pointer, '/items/0/quantity')

    const missing = unwrap(client.GET('/api/v1/listing/{listingId}', { params: { path: { listingId: '0'.repeat(26) } } }))
    await assert.rejects(missing, (error: unknown) => {
      assert.ok(error instanceof ProblemError)
      assert.equal(error.status, 404)
      assert.equal(error.problem.type, '/problems/not-found')
      return true
    })

    const id = (await unwrap(client.POST('/api/v1/listing/create', { body: createBody() }))).listingId
    const stale = await client.POST('/api/v1/listing/{listingId}/withdraw', { params: { path: { listingId: id }, header: { 'if-match': '"9"' } } })
    assert.equal(stale.response.status, 412)
    assert.equal(stale.error?.type, '/problems/precondition-failed')

    const anonymous = createListingClient({ baseUrl: service.baseUrl })
    const refused = await anonymous.GET('/api/v1/listing', {})
    assert.equal(refused.error?.type, '/problems/unauthorized')
  })

  test('discovery, typed, with a marketplace’s token: listings near a point; a provider’s token is 403', async () => {
    const marketplace = createListingClient({ baseUrl: service.baseUrl, token: (await service.newMarketplace()).token })
    marketplace.use({
      onRequest({ request, schemaPath }) {
        called.add(`${request.method} ${schemaPath}`)
        return request
      },
    })
    const { listingId } = await unwrap(client.POST('/api/v1/listing/create', { body: createBody() }))
    const { latitude, longitude } = createBody().location
    const query = { latitude, longitude, radiusKm: 1, sort: 'distance' as const, limit: 1 }
    const page = await unwrap(marketplace.GET('/api/v1/discover', { params: { query } }))
    assert.equal(page.data[0]?.distanceMeters, 0)
    assert.equal(page.data[0]?.listing.brand.industry, 'bakery')
    const ids: Array<string | undefined> = [page.data[0]?.listing.id]
    let cursor = page.nextCursor
    while (cursor !== null) {
      const next = await unwrap(marketplace.GET('/api/v1/discover', { params: { query: { ...query, cursor } } }))
      ids.push(next.data[0]?.listing.id)
      cursor = next.nextCursor
    }
    assert.ok(ids.includes(listingId))
    const refused = await client.GET('/api/v1/discover', { params: { query } })
    assert.equal(refused.error?.type, '/problems/forbidden')
  })

  test('reservations, typed: a marketplace holds, reads, confirms and releases; the provider reads the stock and cancels', async () => {
    const marketplace = createListingClient({ baseUrl: service.baseUrl, token: (await service.newMarketplace('Deals App')).token })
    marketplace.use({
      onRequest({ request, schemaPath }) {
        called.add(`${request.method} ${schemaPath}`)
        return request
      },
    })
    const body = createBody(2)
    body.items[1] = { ...(body.items[1] as CreateBody['items'][number]), quantity: 5 }
    const { listingId } = await unwrap(client.POST('/api/v1/listing/create', { body }))
    const hold = (referenceId: string, quantity: number) =>
      unwrap(marketplace.POST('/api/v1/reservations', { body: { listingId, referenceId, items: [{ position: 1, quantity }], holdSeconds: 300 } }))

    const held = await hold('basket-1', 2)
    assert.deepEqual([held.status, held.version, held.marketplace.name, held.items[0]?.quantity], ['held', 1, 'Deals App', 2])
    const reservationId = held.id
    assert.deepEqual(await unwrap(marketplace.GET('/api/v1/reservations/{reservationId}', { params: { path: { reservationId } } })), held)
    const stock = await unwrap(client.GET('/api/v1/listing/{listingId}/stock', { params: { path: { listingId } } }))
    assert.deepEqual(stock.items[1], { position: 1, quantity: 5, held: 2, available: 3 })

    const confirmed = await unwrap(
      marketplace.POST('/api/v1/reservations/{reservationId}/confirm', { params: { path: { reservationId }, header: { 'if-match': '"1"' } } }),
    )
    assert.deepEqual([confirmed.status, confirmed.version], ['confirmed', 2])
    const released = await unwrap(
      marketplace.POST('/api/v1/reservations/{reservationId}/release', { params: { path: { reservationId: (await hold('basket-2', 1)).id } } }),
    )
    assert.deepEqual([released.status, released.endedBy], ['released', 'marketplace'])
    const cancelled = await unwrap(client.POST('/api/v1/reservations/{reservationId}/cancel', { params: { path: { reservationId } } }))
    assert.deepEqual([cancelled.status, cancelled.endedBy], ['cancelled', 'provider'])

    const page = await unwrap(client.GET('/api/v1/reservations', { params: { query: { listingId, status: 'cancelled', limit: 10 } } }))
    assert.deepEqual(
      page.data.map((reservation) => reservation.id),
      [reservationId],
    )
    const short = await marketplace.POST('/api/v1/reservations', { body: { listingId, referenceId: 'basket-3', items: [{ position: 1, quantity: 6 }] } })
    assert.equal(short.error?.type, '/problems/insufficient-stock')
    assert.equal(short.error?.errors?.[0]?.available, 5)
    const refused = await client.POST('/api/v1/reservations', { body: { listingId, referenceId: 'basket-4', items: [{ position: 0, quantity: 1 }] } })
    assert.equal(refused.error?.type, '/problems/forbidden')
  })

  test('photos, typed: upload one (the same bytes again are the same image), then read it back without a token', async () => {
    const photo = await phonePhoto(80, 60)
    const upload = () =>
      client.POST('/api/v1/images', { body: new Uint8Array(photo), bodySerializer: (bytes) => bytes, headers: { 'content-type': 'image/jpeg' } })
    const uploaded = await unwrap(upload())
    assert.deepEqual([uploaded.format, uploaded.width, uploaded.height], ['jpeg', 60, 80])
    assert.equal((await upload()).response.status, 200)
    const file = new URL(uploaded.url).pathname.slice('/images/'.length)
    const image = await client.GET('/images/{file}', { params: { path: { file } }, parseAs: 'arrayBuffer' })
    assert.equal(image.response.headers.get('content-type'), 'image/jpeg')
    assert.equal(image.data?.byteLength, uploaded.bytes)
    const refused = await client.POST('/api/v1/images', { body: 'not a photo', bodySerializer: (text) => text, headers: { 'content-type': 'text/plain' } })
    assert.equal(refused.error?.type, '/problems/unsupported-media-type')
  })

  test('the operations without a token: probes and metrics', async () => {
    assert.equal((await unwrap(client.GET('/healthz', {}))).status, 'ok')
    assert.equal((await client.GET('/readyz', {})).response.status, 200)
    const metrics = await client.GET('/metrics', { parseAs: 'text' })
    assert.match(metrics.data ?? '', /listing_http_requests_total/)
  })

  test('the README’s TypeScript walk-through (clients/typescript/example.ts) runs as it is', async () => {
    const { token } = await service.newProvider()
    const { token: marketplaceToken } = await service.newMarketplace()
    // As the README runs it: `npx tsx clients/typescript/example.ts`, a process of its own.
    const example = await run(process.execPath, ['--import', 'tsx', join(ROOT, 'clients', 'typescript', 'example.ts')], {
      env: cleanEnv({ BASE_URL: service.baseUrl, TOKEN: token, MARKETPLACE_TOKEN: marketplaceToken, IMAGE_URL: fixtureImages.url('/tiny.png') }),
    })
    assert.equal(example.code, 0, example.stderr)
    assert.match(example.stdout, /changed: version 2 status active/)
    assert.match(example.stdout, /refused: 412 \/problems\/precondition-failed/)
    assert.match(example.stdout, /held: held until 20/)
    assert.match(example.stdout, /available: 0, 4\n/)
    assert.match(example.stdout, /confirmed: version 2 status confirmed/)
    assert.match(example.stdout, /marketplace events: reservation.held, reservation.confirmed\n/)
    assert.match(example.stdout, /withdrawn: version 4 status withdrawn/)
    // The confirmation took two coffees out of the listing's quantity: a change of the listing too.
    assert.match(example.stdout, /events: listing.created, listing.updated, listing.updated, listing.withdrawn\n/)
  })

  test('every operation of the document has been called through the client', async () => {
    const document = JSON.parse(readFileSync(DOCUMENT_FILE, 'utf8')) as { paths: Record<string, Record<string, unknown>> }
    const operations = Object.entries(document.paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => ['get', 'post', 'patch', 'put', 'delete'].includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    )
    const missed = operations.filter((operation) => !called.has(operation))
    assert.deepEqual(missed, [], 'operations the client tests never call')
  })
})
