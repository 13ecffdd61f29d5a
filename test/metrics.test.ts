import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { before, test } from 'node:test'
import { CompiledQuery } from 'kysely'
import { openDatabase } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { PreparedQuery } from '../src/db/prepared-query.js'
import { queryOperation, type QueryOperation } from '../src/db/query-operation.js'
import { Metrics } from '../src/metrics.js'
import { fixtureImages, listingBody } from './fixtures.js'
import { createTestDatabase, describeEachDialect, type TestProvider, type TestService } from './helper.js'
import { startServer } from './process.js'
import { parseExposition, samplesOf, valueOf, type Exposition } from './prometheus-text.js'

// GET /metrics (docs/operations.md#metrics): requests by route and status, image probes by outcome, database query latency,
// process metrics; label values bounded, and never a URL, provider id or token.

const REQUESTS = 'listing_http_requests_total'
const DURATION = 'listing_http_request_duration_seconds'
const PROBES = 'listing_image_probes_total'
const PROBE_DURATION = 'listing_image_probe_duration_seconds'
const QUERY_DURATION = 'listing_db_query_duration_seconds'
const CREATE = '/api/v1/listing/create'
const LIST = '/api/v1/listing'

async function scrape(service: TestService): Promise<{ text: string; exposition: Exposition; contentType: string }> {
  // No token: like /healthz, it is for the network's operators.
  const response = await service.request('GET', '/metrics')
  assert.equal(response.status, 200, response.text)
  return { text: response.text, exposition: parseExposition(response.text), contentType: response.headers.get('content-type') ?? '' }
}

const withBrandImage = (path: string) => listingBody({ brand: { ...listingBody().brand, imageUrl: fixtureImages.url(path) } })

/** Asserts that a histogram's series with `labels` is well formed and holds `count` observations. */
function assertHistogram(exposition: Exposition, name: string, labels: Record<string, string>, count: number): void {
  const buckets = samplesOf(exposition, `${name}_bucket`, labels)
  assert.ok(buckets.length > 1, `${name} ${JSON.stringify(labels)} has no buckets`)
  const bounds = buckets.map((bucket) => Number(bucket.labels.le === '+Inf' ? Infinity : bucket.labels.le))
  assert.deepEqual(
    bounds,
    [...bounds].sort((a, b) => a - b),
    'buckets in increasing order',
  )
  assert.equal(bounds.at(-1), Infinity)
  buckets.slice(1).forEach((bucket, i) => assert.ok(bucket.value >= (buckets[i] as { value: number }).value, 'cumulative'))
  assert.equal(buckets.at(-1)?.value, count, `${name} ${JSON.stringify(labels)} +Inf bucket`)
  assert.equal(valueOf(exposition, `${name}_count`, labels), count)
  const sum = valueOf(exposition, `${name}_sum`, labels) as number
  assert.ok(count === 0 ? sum === 0 : sum > 0, `${name}_sum ${sum}`)
}

await describeEachDialect('GET /metrics', (service) => {
  let provider: TestProvider
  const unknownPath = `/no-such-${randomUUID()}`
  const unknownApiPath = `/api/v1/no-such-${randomUUID()}`
  let scraped: Awaited<ReturnType<typeof scrape>>

  before(async () => {
    provider = await service.newProvider()
    const expect = async (status: number, sent: Promise<{ status: number; text: string }>) => assert.equal((await sent).status, status, (await sent).text)
    await expect(201, service.create(provider.token, listingBody()))
    // The same image again: a cached success, not a second fetch.
    await expect(201, service.create(provider.token, listingBody()))
    await expect(200, service.list(provider.token))
    await expect(400, service.create(provider.token, {}))
    await expect(400, service.create(provider.token, withBrandImage('/status/404')))
    await expect(413, service.create(provider.token, withBrandImage('/size/6000000')))
    await expect(415, service.create(provider.token, withBrandImage('/tiny.pdf')))
    await expect(401, service.request('GET', LIST))
    await expect(404, service.request('GET', unknownPath))
    await expect(404, service.request('GET', unknownApiPath, { token: provider.token }))
    scraped = await scrape(service)
  })

  test('is Prometheus text with HELP and TYPE for every listing_ metric, and process metrics', () => {
    assert.equal(scraped.contentType, 'text/plain; version=0.0.4; charset=utf-8')
    const families = [...new Set(scraped.exposition.samples.map((s) => s.name.replace(/_(bucket|sum|count)$/, '')))]
    const own = families.filter((name) => name.startsWith('listing_'))
    assert.ok(own.length >= 6, own.join(', '))
    for (const name of own) {
      assert.ok(scraped.exposition.help.get(name), `${name} has no HELP`)
      assert.ok(scraped.exposition.type.get(name), `${name} has no TYPE`)
    }
    assert.ok(valueOf(scraped.exposition, 'process_cpu_user_seconds_total') !== undefined)
    assert.ok(valueOf(scraped.exposition, 'nodejs_heap_size_used_bytes') !== undefined)
    assert.equal(valueOf(scraped.exposition, 'listing_rate_limit_store_errors_total'), 0)
  })

  test('counts requests by method, route template and status', () => {
    const count = (method: string, route: string, status: string) => valueOf(scraped.exposition, REQUESTS, { method, route, status })
    assert.equal(count('POST', CREATE, '201'), 2)
    assert.equal(count('POST', CREATE, '400'), 2)
    assert.equal(count('POST', CREATE, '413'), 1)
    assert.equal(count('POST', CREATE, '415'), 1)
    assert.equal(count('GET', LIST, '200'), 1)
    assert.equal(count('GET', LIST, '401'), 1)
    assert.equal(count('GET', 'unmatched', '404'), 2)
    assert.equal(count('GET', LIST, '404'), undefined)
    // Every request of before(), and nothing else (this scrape is counted once it is answered).
    const total = samplesOf(scraped.exposition, REQUESTS).reduce((sum, sample) => sum + sample.value, 0)
    assert.equal(total, 10)
  })

  test('times requests in histograms with the same labels: cumulative buckets, +Inf = count, a sum', () => {
    assertHistogram(scraped.exposition, DURATION, { method: 'POST', route: CREATE, status: '201' }, 2)
    assertHistogram(scraped.exposition, DURATION, { method: 'GET', route: LIST, status: '200' }, 1)
    assertHistogram(scraped.exposition, DURATION, { method: 'GET', route: 'unmatched', status: '404' }, 2)
  })

  test('a path no route serves is labelled "unmatched", never by its URL', () => {
    const routes = new Set(samplesOf(scraped.exposition, REQUESTS).map((sample) => sample.labels.route))
    assert.ok(routes.has('unmatched'))
    for (const route of routes) assert.ok(route === 'unmatched' || route?.startsWith('/'), `route label ${route}`)
    assert.ok(!scraped.text.includes(unknownPath), 'the unknown path is a label')
    assert.ok(!scraped.text.includes(unknownApiPath), 'the unknown /api/v1 path is a label')
  })

  test('counts image fetches by outcome with their latency; a cached success is a reuse, not a fetch', () => {
    const expected = { ok: 1, 'image-unavailable': 1, 'image-too-large': 1, 'unsupported-image-format': 1 }
    for (const [outcome, count] of Object.entries(expected)) {
      assert.equal(valueOf(scraped.exposition, PROBES, { outcome }), count, outcome)
      assertHistogram(scraped.exposition, PROBE_DURATION, { outcome }, count)
    }
    assert.equal(valueOf(scraped.exposition, 'listing_image_probe_reuses_total', { source: 'cache' }), 1)
    assert.equal(valueOf(scraped.exposition, 'listing_image_probe_reuses_total', { source: 'in-flight' }), 0)
    // No image URL, however it names its host, becomes a label.
    assert.ok(!scraped.text.includes(fixtureImages.baseUrl))
  })

  test('times database queries by operation: a create adds inserts, a page adds a select', async () => {
    const count = (exposition: Exposition, operation: QueryOperation) => valueOf(exposition, `${QUERY_DURATION}_count`, { operation }) as number
    const start = (await scrape(service)).exposition
    assert.equal((await service.create(provider.token, listingBody())).status, 201)
    const created = (await scrape(service)).exposition
    assert.ok(count(created, 'insert') > count(start, 'insert'), 'the create added no insert')
    // The referenceId lookup is a PreparedQuery.
    assert.ok(count(created, 'select') > count(start, 'select'), 'the create added no select')
    assert.equal((await service.list(provider.token)).status, 200)
    // The token is cached by now (the test clock stands still): this select is the page's PreparedQuery.
    const listed = (await scrape(service)).exposition
    assert.ok(count(listed, 'select') > count(created, 'select'), 'the page added no select')
    for (const operation of ['select', 'insert', 'other'] as const) {
      assertHistogram(listed, QUERY_DURATION, { operation }, count(listed, operation))
    }
  })

  test("PreparedQuery executions and migrations reach openDatabase's query observer", async () => {
    const seen: QueryOperation[] = []
    const database = openDatabase(service.databaseUrl, { observeQuery: (operation) => seen.push(operation) })
    try {
      await migrate(database)
      assert.ok(seen.includes('select') && seen.includes('other'), seen.join(','))
      seen.length = 0
      const byId = new PreparedQuery<{ id: string }, { name: string }>(database.kysely, (db, param) =>
        db.selectFrom('providers').select('name').where('id', '=', param('id')),
      )
      assert.equal((await byId.execute({ id: provider.id })).length, 1)
      assert.deepEqual(seen, ['select'])
    } finally {
      await database.close()
    }
  })

  test('never shows the bearer token, its id or the provider id', () => {
    for (const secret of [provider.token, provider.token.slice(4), provider.tokenId, provider.id]) {
      assert.ok(!scraped.text.includes(secret), `${secret} is in /metrics`)
    }
  })
})

test('raw SQL is labelled by its first keyword, a WITH statement by what it modifies, never by its text', () => {
  const raw = (text: string) => queryOperation(CompiledQuery.raw(text))
  assert.equal(raw('  SELECT 1'), 'select')
  assert.equal(raw('insert into t (a) values (1)'), 'insert')
  assert.equal(raw('update t set a = 1'), 'update')
  assert.equal(raw('delete from t'), 'delete')
  assert.equal(raw('with c as (update p set n = n + 1 returning n), l as (insert into t select n from c) select 1'), 'insert')
  assert.equal(raw('with c as (update p set n = n + 1 returning n) select n from c'), 'update')
  assert.equal(raw('with c as (select 1) select * from c'), 'select')
  assert.equal(raw('begin immediate'), 'other')
  assert.equal(raw('create table t (a int)'), 'other')
})

test('the rate-limit store error counter counts each error it is told of', async () => {
  const metrics = new Metrics()
  metrics.countRateLimitStoreError(new Error('connection refused'))
  metrics.countRateLimitStoreError(new Error('timeout'))
  const { text } = await metrics.exposition()
  assert.equal(valueOf(parseExposition(text), 'listing_rate_limit_store_errors_total'), 2)
})

test('the service as npm start runs it measures its database queries from start-up on, and never shows the demo token', async (t) => {
  const database = await createTestDatabase('sqlite')
  const server = await startServer({ DATABASE_URL: database.url })
  t.after(async () => {
    await server.stop('SIGKILL')
    await database.drop()
  })
  const [token] = server.printedTokens()
  assert.ok(token, server.stdout())
  const page = await fetch(`${server.baseUrl}${LIST}`, { headers: { authorization: `Bearer ${token}` } })
  assert.equal(page.status, 200)
  const response = await fetch(`${server.baseUrl}/metrics`)
  assert.equal(response.status, 200)
  const text = await response.text()
  const exposition = parseExposition(text)
  // The migrations and the demo provider's rows were written before the app was built: server.ts gave
  // openDatabase the observer of the same Metrics that /metrics serves.
  assert.ok((valueOf(exposition, `${QUERY_DURATION}_count`, { operation: 'insert' }) as number) >= 2, text)
  assert.ok((valueOf(exposition, `${QUERY_DURATION}_count`, { operation: 'select' }) as number) >= 2, text)
  assert.equal(valueOf(exposition, REQUESTS, { method: 'GET', route: LIST, status: '200' }), 1)
  assert.ok(!text.includes(token) && !text.includes(token.slice(4)), 'the demo token is in /metrics')
})
