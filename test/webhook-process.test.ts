import assert from 'node:assert/strict'
import { after, afterEach, test } from 'node:test'
import { openDatabase } from '../src/db/connection.js'
import { listingBody } from './fixtures.js'
import { createTestDatabase, parseJsonOrUndefined, testDialects } from './helper.js'
import { marketplaceOwner, recordFor, reservationData, reservationEvent } from './owner-events.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'
import { parseExposition, valueOf } from './prometheus-text.js'
import { startReceiver, verifies, type Receiver } from './webhook-receiver.js'

// docs/api.md#webhooks with real processes: no committed event is lost across kill -9 (at least once; duplicates only
// where an attempt's outcome was lost), a provider's or a marketplace's, two instances never attempt one delivery
// at once, secrets never logged.

after(killAll)

const dialects = await testDialects()

const receivers: Receiver[] = []
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()))
})

const ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_TIMEOUT_MS: '1000', RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'debug' }

async function call(server: ServerProcess, method: string, path: string, token: string, json?: unknown) {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    signal: AbortSignal.timeout(30_000),
    headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  })
  return { status: response.status, body: parseJsonOrUndefined(await response.text()) as any }
}

async function feedIds(server: ServerProcess, token: string): Promise<string[]> {
  const ids: string[] = []
  for (let cursor: string | undefined; ;) {
    const page = await call(server, 'GET', `/api/v1/events?limit=100${cursor ? `&after=${cursor}` : ''}`, token)
    assert.equal(page.status, 200)
    if (page.body.data.length === 0) return ids
    ids.push(...page.body.data.map((event: { id: string }) => event.id))
    cursor = page.body.nextCursor
  }
}

/** Longest the writer loops run: a test that fails before calling stop() must not leave them spinning. */
const WRITING_AT_MOST_MS = 60_000

/**
 * Records reservation events in a marketplace's stream from this process, as a reservation's change will, until
 * `stop()`, or WRITING_AT_MOST_MS: the events a killed server must still deliver to the marketplace's endpoint.
 */
function keepRecording(databaseUrl: string, marketplace: { id: string; name: string }) {
  let stopped = false
  const deadline = Date.now() + WRITING_AT_MOST_MS
  const database = openDatabase(databaseUrl)
  const loop = (async () => {
    for (let version = 1; !stopped && Date.now() < deadline; version++) {
      const data = reservationData(marketplace, 'prv_x', { id: 'rsv_crash', version })
      await recordFor(database, marketplaceOwner(marketplace.id), Date.now(), [reservationEvent('reservation.held', data)])
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  })()
  return async () => {
    stopped = true
    try {
      await loop
    } finally {
      await database.close()
    }
  }
}

/**
 * Creates and changes listings from `writers` loops until `stop()`, or WRITING_AT_MOST_MS; errors from a killed
 * server are expected.
 */
function keepWriting(server: () => ServerProcess, token: string, writers: number) {
  let stopped = false
  const deadline = Date.now() + WRITING_AT_MOST_MS
  const loops = Array.from({ length: writers }, async () => {
    while (!stopped && Date.now() < deadline) {
      try {
        const created = await call(server(), 'POST', '/api/v1/listing/create', token, listingBody())
        if (created.status === 201) {
          await call(server(), 'PATCH', `/api/v1/listing/${created.body.listingId}`, token, { items: [{ position: 0, quantity: 0 }] })
        }
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
  })
  return async () => {
    stopped = true
    await Promise.all(loops)
  }
}

for (const dialect of dialects) {
  test(`[${dialect}] kill -9 while events are written and delivered: every committed event reaches the receiver, a provider’s and a marketplace’s`, async () => {
    const database = await createTestDatabase(dialect)
    try {
      const env = { ...ENV, DATABASE_URL: database.url }
      const created = await runCli(['provider', 'create', '--name', 'Crashing Bakery'], { DATABASE_URL: database.url })
      assert.equal(created.code, 0, created.stderr)
      const { token } = JSON.parse(created.stdout)
      const madeMarketplace = await runCli(['marketplace', 'create', '--name', 'Crashing Deals'], { DATABASE_URL: database.url })
      assert.equal(madeMarketplace.code, 0, madeMarketplace.stderr)
      const marketplace = JSON.parse(madeMarketplace.stdout) as { id: string; name: string; token: string }
      const hooks = await startReceiver()
      const marketplaceHooks = await startReceiver()
      receivers.push(hooks, marketplaceHooks)
      hooks.delayMs = 5
      marketplaceHooks.delayMs = 5
      let server = await startServer(env)
      const endpoint = await call(server, 'POST', '/api/v1/webhooks', token, { url: hooks.url })
      assert.equal(endpoint.status, 201)
      const marketplaceEndpoint = await call(server, 'POST', '/api/v1/webhooks', marketplace.token, { url: marketplaceHooks.url })
      assert.equal(marketplaceEndpoint.status, 201)
      const outputs: string[] = []

      const stopWriting = keepWriting(() => server, token, 4)
      const stopRecording = keepRecording(database.url, marketplace)
      try {
        for (let cycle = 0; cycle < 2; cycle++) {
          await new Promise((resolve) => setTimeout(resolve, 800 + Math.random() * 700))
          outputs.push(server.stdout() + server.stderr())
          await server.stop('SIGKILL')
          server = await startServer(env)
        }
        await new Promise((resolve) => setTimeout(resolve, 500))
      } finally {
        await stopWriting()
        await stopRecording()
      }

      const committed = await feedIds(server, token)
      assert.ok(committed.length > 20, `only ${committed.length} events were written`)
      // An attempt cut off by the kill is made again once its lease (WEBHOOK_TIMEOUT_MS + 15 s) runs out.
      await hooks.waitFor((deliveries) => new Set(deliveries.map((d) => d.id)).size >= committed.length, 45_000)
      const received = new Set(hooks.deliveries.map((delivery) => delivery.id))
      assert.deepEqual(
        committed.filter((id) => !received.has(id)),
        [],
      )
      assert.deepEqual(
        [...received].filter((id) => !committed.includes(id)),
        [],
      )
      for (const delivery of hooks.deliveries.slice(0, 20)) assert.ok(verifies(endpoint.body.secret, delivery))
      const duplicates = hooks.deliveries.length - received.size
      console.log(`# [${dialect}] ${committed.length} events, ${hooks.deliveries.length} deliveries, ${duplicates} duplicates after 2 kills`)

      // The marketplace's stream, through the same kills: each of its events at its endpoint, and only those.
      const ofMarketplace = await feedIds(server, marketplace.token)
      assert.ok(ofMarketplace.length > 20, `only ${ofMarketplace.length} marketplace events were written`)
      await marketplaceHooks.waitFor((deliveries) => new Set(deliveries.map((d) => d.id)).size >= ofMarketplace.length, 45_000)
      assert.deepEqual([...new Set(marketplaceHooks.deliveries.map((delivery) => delivery.id))].sort(), [...ofMarketplace].sort())
      for (const delivery of marketplaceHooks.deliveries.slice(0, 20)) assert.ok(verifies(marketplaceEndpoint.body.secret, delivery))
      console.log(`# [${dialect}] marketplace: ${ofMarketplace.length} events, ${marketplaceHooks.deliveries.length} deliveries after 2 kills`)

      outputs.push(server.stdout() + server.stderr())
      await server.stop('SIGTERM')
      // Debug logging on, every attempt logged: the secret is nowhere.
      for (const output of outputs) {
        assert.ok(!output.includes(endpoint.body.secret.slice('whsec_'.length)))
        assert.ok(!output.includes(marketplaceEndpoint.body.secret.slice('whsec_'.length)))
      }
      assert.ok(outputs.join('').includes('"msg":"webhook attempt"'))
    } finally {
      await database.drop()
    }
  })
}

test(
  'two instances on one PostgreSQL database: every event delivered once, none attempted by both at once',
  { skip: !dialects.includes('postgres') && 'PostgreSQL does not answer' },
  async () => {
    const database = await createTestDatabase('postgres')
    try {
      const env = { ...ENV, DATABASE_URL: database.url }
      const servers = await Promise.all([startServer(env), startServer(env)])
      const created = await runCli(['provider', 'create', '--name', 'Two Ovens'], { DATABASE_URL: database.url })
      const { token } = JSON.parse(created.stdout)
      const hooks = await startReceiver()
      receivers.push(hooks)
      // Longer than a poll (250 ms): while one instance's attempts (64 at most per endpoint) are answered, the
      // other's poll finds the rest due and unclaimed. At 50 ms, one instance sometimes took all of them first.
      hooks.delayMs = 300
      // More than one instance's share of an endpoint, so one instance alone cannot take them all in one claim.
      const EVENTS = 100
      assert.equal((await call(servers[0], 'POST', '/api/v1/webhooks', token, { url: hooks.url })).status, 201)
      await Promise.all(Array.from({ length: EVENTS }, (_, i) => call(servers[i % 2]!, 'POST', '/api/v1/listing/create', token, listingBody())))
      await hooks.waitFor((deliveries) => deliveries.length >= EVENTS, 20_000)
      await new Promise((resolve) => setTimeout(resolve, 500))
      assert.equal(hooks.deliveries.length, EVENTS)
      assert.equal(new Set(hooks.deliveries.map((delivery) => delivery.id)).size, EVENTS)
      assert.equal(hooks.maxConcurrentSameId, 1)
      // docs/api.md#webhooks: the first attempt starts within 5 s of the commit.
      const lags = hooks.deliveries.map((delivery) => delivery.arrivedAt - Date.parse(delivery.event.createdAt))
      assert.ok(Math.max(...lags) < 5000, `lags: ${lags.join(', ')}`)
      // Both instances took part.
      const attempted = servers.map((server) => server.logLines().filter((line) => line.msg === 'webhook attempt').length)
      assert.ok(
        attempted.every((n) => n > 0),
        `attempts per instance: ${attempted.join(', ')}`,
      )
      // Operators see them in /metrics: attempts by outcome, and the lag to each first attempt.
      const scraped = await Promise.all(servers.map(async (server) => parseExposition(await (await fetch(`${server.baseUrl}/metrics`)).text())))
      const count = (name: string, labels?: Record<string, string>) => scraped.reduce((sum, exposition) => sum + (valueOf(exposition, name, labels) ?? 0), 0)
      assert.equal(count('listing_webhook_attempt_duration_seconds_count', { outcome: 'succeeded' }), EVENTS)
      assert.equal(count('listing_webhook_attempt_duration_seconds_count', { outcome: 'failed' }), 0)
      assert.equal(count('listing_webhook_first_attempt_lag_seconds_count'), EVENTS)
      await Promise.all(servers.map((server) => server.stop('SIGTERM')))
    } finally {
      await database.drop()
    }
  },
)

test('SIGTERM while an attempt hangs: the drain cuts it off and the process exits 0 within 10 s; another start makes it again', async () => {
  const database = await createTestDatabase('sqlite')
  try {
    const env = { ...ENV, DATABASE_URL: database.url, WEBHOOK_TIMEOUT_MS: '30000' }
    let server = await startServer(env)
    const created = await runCli(['provider', 'create', '--name', 'Draining Bakery'], { DATABASE_URL: database.url })
    const { token } = JSON.parse(created.stdout)
    const hooks = await startReceiver(() => 'hang')
    receivers.push(hooks)
    assert.equal((await call(server, 'POST', '/api/v1/webhooks', token, { url: hooks.url })).status, 201)
    assert.equal((await call(server, 'POST', '/api/v1/listing/create', token, listingBody())).status, 201)
    await hooks.waitFor((deliveries) => deliveries.length === 1)
    const signalled = Date.now()
    const exit = await server.stop('SIGTERM', 12_000)
    assert.deepEqual(exit, { code: 0, signal: null })
    assert.ok(Date.now() - signalled < 10_000, `${Date.now() - signalled} ms`)
    // Unrecorded, so still owed; its lease (30 s + 15 s) keeps it until then.
    hooks.answer = () => 200
    server = await startServer(env)
    const log = await call(server, 'GET', `/api/v1/webhooks/${(await call(server, 'GET', '/api/v1/webhooks', token)).body.data[0].id}/deliveries`, token)
    assert.deepEqual(
      log.body.data.map((entry: any) => [entry.outcome, entry.attempt]),
      [['pending', 1]],
    )
    await server.stop('SIGTERM')
  } finally {
    await database.drop()
  }
})
