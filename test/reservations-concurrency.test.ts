import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, test } from 'node:test'
import { buildApp } from '../src/app.js'
import { jobDatabase, openDatabase, type Database } from '../src/db/connection.js'
import { recordExpiries } from '../src/listings/expiry.js'
import { expireDueHolds } from '../src/reservations/transactions.js'
import { MarketplaceRepository } from '../src/providers/marketplaces.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { item, listingBody } from './fixtures.js'
import { createTestDatabase, parseJsonOrUndefined, startService, testDialects, type Response, type TestDatabase, type TestService } from './helper.js'
import { assertProblem } from './http-support.js'
import { killAll, startServer, type ServerProcess } from './process.js'
import { seededRandom } from './seeded-random.js'
import { checkStockInvariant } from './stock-invariant.js'

/*
 * No unit is sold twice, across concurrent requests and instances (docs/api.md#reservations): real parallel HTTP
 * requests, on SQLite (one instance, one writer) and on PostgreSQL through two instances on one database. The storms
 * run against the service as real processes (each instance on its own event loop, as deployed); the races that need
 * the clock at a hold's expiry run against instances in this process, which share the test's clock. After each test
 * the tables themselves are checked: held_record is the sum of the counted reservations, nothing is held beyond its
 * quantity (stock-invariant.ts).
 */

after(killAll)

interface Instance {
  baseUrl: string
}

interface Party {
  id: string
  token: string
}

// Each request on a connection of its own, as many clients at once would be.
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity })
after(() => agent.destroy())

function call(instance: Instance, method: string, path: string, token: string, json?: unknown): Promise<Response> {
  const bytes = json === undefined ? undefined : Buffer.from(JSON.stringify(json))
  const headers: Record<string, string | number> = { authorization: `Bearer ${token}`, 'content-length': bytes?.length ?? 0 }
  if (bytes) headers['content-type'] = 'application/json'
  return new Promise((resolve, reject) => {
    const request = http.request(new URL(path, instance.baseUrl), { method, headers, agent }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => {
        const fetchHeaders = new Headers()
        for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') fetchHeaders.set(name, value)
        resolve({ status: response.statusCode ?? 0, headers: fetchHeaders, text, body: parseJsonOrUndefined(text) })
      })
      response.on('error', reject)
    })
    request.on('error', reject)
    request.end(bytes)
  })
}

function countBy<T>(values: readonly T[]): Map<T, number> {
  const counts = new Map<T, number>()
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1)
  return counts
}

/** An owner's whole event feed, page after page. */
async function feedOf(instance: Instance, token: string): Promise<Array<{ type: string; data: any }>> {
  const events: Array<{ type: string; data: any }> = []
  for (let after: string | null = null; ;) {
    const page = await call(instance, 'GET', `/api/v1/events?limit=100${after === null ? '' : `&after=${after}`}`, token)
    assert.equal(page.status, 200, page.text)
    if (page.body.data.length === 0) return events
    events.push(...page.body.data)
    after = page.body.nextCursor
  }
}

async function aListing(instance: Instance, token: string, quantities: number[]): Promise<string> {
  const created = await call(instance, 'POST', '/api/v1/listing/create', token, listingBody({ items: quantities.map((quantity, k) => item(k, { quantity })) }))
  assert.equal(created.status, 201, created.text)
  return created.body.listingId
}

type StockItems = Array<{ position: number; quantity: number; held: number; available: number }>

/** The listing's stock through every instance, which all read the same. */
async function stockOf(instances: Instance[], token: string, listingId: string): Promise<StockItems> {
  const answers = await Promise.all(instances.map((instance) => call(instance, 'GET', `/api/v1/listing/${listingId}/stock`, token)))
  for (const answer of answers) assert.equal(answer.status, 200, answer.text)
  for (const answer of answers.slice(1)) assert.deepEqual(answer.body, answers[0]?.body, 'every instance reads the same stock')
  return (answers[0] as Response).body.items
}

const dialects = await testDialects()

for (const dialect of dialects) {
  describe(`storms of holds, real processes [${dialect}]`, () => {
    let testDatabase: TestDatabase
    let database: Database
    // PostgreSQL: two instances on one database, requests alternating between them. SQLite: its one instance.
    let servers: ServerProcess[] = []
    const instanceFor = (n: number): Instance => servers[n % servers.length] as ServerProcess
    const parties = {
      provider: async (): Promise<Party> => {
        const made = await new ProviderRepository(database).create({ name: 'Storm Bakery' }, Date.now())
        return { id: made.id, token: made.token.token }
      },
      marketplace: async (name: string): Promise<Party> => {
        const made = await new MarketplaceRepository(database).create(name, Date.now())
        return { id: made.id, token: made.token }
      },
    }

    before(async () => {
      testDatabase = await createTestDatabase(dialect)
      const env = { DATABASE_URL: testDatabase.url, RATE_LIMIT_PER_MINUTE: '0' }
      // Slow to start on a busy machine: the default wait for "ready" is made for an idle one.
      servers = await Promise.all((dialect === 'postgres' ? [1, 2] : [1]).map(() => startServer(env, { timeoutMs: 60_000 })))
      database = openDatabase(testDatabase.url)
    })
    after(async () => {
      await Promise.all(servers.map((server) => server.stop()))
      await database?.close()
      await testDatabase?.drop()
    })

    test('1,000 concurrent 1-unit holds of 100 units: exactly 100 × 201 and 900 × 409 insufficient-stock, no 5xx', async (t) => {
      const provider = await parties.provider()
      const markets = await Promise.all([1, 2, 3, 4].map((n) => parties.marketplace(`Storm ${n}`)))
      const listingId = await aListing(instanceFor(0), provider.token, [100])
      const started = performance.now()
      const answers = await Promise.all(
        Array.from({ length: 1000 }, (_, n) =>
          call(instanceFor(n), 'POST', '/api/v1/reservations', (markets[n % markets.length] as Party).token, {
            listingId,
            referenceId: `storm-${n}`,
            items: [{ position: 0, quantity: 1 }],
          }),
        ),
      )
      const tookMs = Math.round(performance.now() - started)
      assert.deepEqual(
        [...countBy(answers.map((answer) => answer.status))].sort(),
        [
          [201, 100],
          [409, 900],
        ],
        `in ${tookMs} ms`,
      )
      for (const answer of answers.filter((a) => a.status === 409)) {
        const problem = assertProblem(answer, 409, 'insufficient-stock')
        assert.deepEqual(
          problem.errors.map((e: any) => [e.pointer, e.available]),
          [['/items/0/quantity', 0]],
        )
      }
      const made = answers.filter((answer) => answer.status === 201)
      assert.equal(new Set(made.map((answer) => answer.body.id)).size, 100)
      assert.deepEqual(await stockOf(servers, provider.token, listingId), [{ position: 0, quantity: 100, held: 100, available: 0 }])
      assert.deepEqual((await checkStockInvariant(database.kysely, Date.now())).get(listingId)?.held, [100])
      // Each marketplace hears of its own 201s, each once, and of nothing else.
      for (const market of markets) {
        const theirs = made.filter((answer) => answer.body.marketplace.id === market.id).map((answer) => answer.body.id)
        const heard = (await feedOf(instanceFor(0), market.token)).map((event) => event.data.id)
        assert.deepEqual(heard.sort(), theirs.sort())
      }
      const perMarket = markets.map((market) => made.filter((answer) => answer.body.marketplace.id === market.id).length)
      t.diagnostic(`${servers.length} instance(s), ${tookMs} ms; 201s per marketplace: ${perMarket.join(', ')}`)
    })

    test('40 concurrent duplicates of one hold of every unit: one reservation, one 201 and 39 × 200 naming it', async () => {
      const provider = await parties.provider()
      const market = await parties.marketplace('Twice')
      const listingId = await aListing(instanceFor(0), provider.token, [3, 2])
      const body = {
        listingId,
        referenceId: 'basket-once',
        items: [
          { position: 1, quantity: 2 },
          { position: 0, quantity: 3 },
        ],
      }
      const answers = await Promise.all(Array.from({ length: 40 }, (_, n) => call(instanceFor(n), 'POST', '/api/v1/reservations', market.token, body)))
      assert.deepEqual(
        [...countBy(answers.map((answer) => answer.status))].sort(),
        [
          [200, 39],
          [201, 1],
        ],
        answers.map((answer) => `${answer.status} ${answer.body?.type ?? ''}`).join(', '),
      )
      assert.equal(new Set(answers.map((answer) => answer.body.id)).size, 1)
      for (const answer of answers) assert.equal(answer.body.status, 'held')
      assert.deepEqual(await stockOf(servers, provider.token, listingId), [
        { position: 0, quantity: 3, held: 3, available: 0 },
        { position: 1, quantity: 2, held: 2, available: 0 },
      ])
      const stored = await database.kysely.selectFrom('reservations').select('id').where('listing_id', '=', listingId).execute()
      assert.equal(stored.length, 1)
      assert.deepEqual(
        (await feedOf(instanceFor(0), market.token)).map((event) => event.type),
        ['reservation.held'],
      )
      await checkStockInvariant(database.kysely, Date.now())
    })
  })
}

/** A second instance in this process: its own app and pool on the first one's database, on the same clock. */
async function secondInstance(service: TestService) {
  const database = openDatabase(service.databaseUrl)
  const app = await buildApp({ config: service.config, database, clock: service.clock })
  const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    baseUrl,
    database,
    async close() {
      await app.close()
      await database.close()
    },
  }
}

for (const dialect of dialects) {
  describe(`ending one reservation from every side at once [${dialect}]`, () => {
    const service = {} as TestService
    let instances: Array<Instance & { database: Database; close(): Promise<void> }> = []
    const instanceFor = (n: number) => instances[n % instances.length] as Instance

    before(async () => {
      Object.assign(service, await startService(dialect, { env: { RATE_LIMIT_PER_MINUTE: '0' } }))
      instances = [{ baseUrl: service.baseUrl, database: service.database, close: async () => {} }]
      if (dialect === 'postgres') instances.push(await secondInstance(service))
    })
    after(async () => {
      for (const instance of instances.slice(1)) await instance.close()
      await service.close?.()
    })

    const invariant = () => checkStockInvariant(service.database.kysely, service.clock())

    /**
     * Each reservation meets a confirm, a release and a cancel by its marketplace, a cancel by the provider, and the
     * sweepers of both instances, all at once, in an order shuffled per reservation. Whatever wins, the reservation
     * leaves `held` once: its feed shows one transition out of it (a confirm may then be cancelled), every answer
     * agrees with that history, and the stock with the outcome.
     */
    async function endAllAtOnce(t: { diagnostic(message: string): void }, sweeperClock: 'ahead' | 'same', seed: number) {
      const COUNT = 30
      const provider = await service.newProvider()
      const market = await service.newMarketplace('Racer')
      const quantities = [40, 40]
      const listingId = await aListing(instanceFor(0), provider.token, quantities)
      const start = service.clock.now
      const made = await Promise.all(
        Array.from({ length: COUNT }, (_, n) =>
          call(instanceFor(n), 'POST', '/api/v1/reservations', market.token, {
            listingId,
            referenceId: `race-${n}`,
            items: [{ position: n % 2, quantity: 2 }],
            holdSeconds: 30,
          }),
        ),
      )
      for (const answer of made) assert.equal(answer.status, 201, answer.text)
      const ids: string[] = made.map((answer) => answer.body.id)
      const expiresAtMs = start + 30_000
      // 'ahead': the instances answer one millisecond before the expiry while the sweepers run on a clock at it (so
      // every transition can win); 'same': all at the expiry, where only the sweepers change anything.
      service.clock.now = sweeperClock === 'ahead' ? expiresAtMs - 1 : expiresAtMs
      const random = seededRandom(seed)
      type Sent = { id: string; action: string; by: 'marketplace' | 'provider'; answer?: Response }
      const sent: Sent[] = []
      const work: Array<() => Promise<void>> = []
      for (const id of ids) {
        const mine: Sent[] = [
          { id, action: 'confirm', by: 'marketplace' },
          { id, action: 'release', by: 'marketplace' },
          { id, action: 'cancel', by: 'marketplace' },
          { id, action: 'cancel', by: 'provider' },
        ]
        sent.push(...mine)
        for (const one of mine)
          work.push(async () => {
            one.answer = await call(
              instanceFor(Math.floor(random() * 2)),
              'POST',
              `/api/v1/reservations/${id}/${one.action}`,
              one.by === 'marketplace' ? market.token : provider.token,
            )
          })
      }
      for (let k = work.length - 1; k > 0; k--) {
        const j = Math.floor(random() * (k + 1))
        ;[work[k], work[j]] = [work[j] as () => Promise<void>, work[k] as () => Promise<void>]
      }
      // The sweepers of both instances run back to back while the requests are in flight: each records what is due
      // when it finds it, under the listing's lock. 'ahead': one expiry per transaction, so that each reservation's
      // races its own requests (the whole batch in one would come first or last for all of them); 'same': as the
      // service's sweeper runs.
      const swept: number[] = []
      let answering = true
      const sweep = (database: Database) =>
        sweeperClock === 'ahead'
          ? expireDueHolds(jobDatabase(database), { nowMs: expiresAtMs, limit: 1 })
          : recordExpiries(jobDatabase(database), () => expiresAtMs)
      const sweeper = async (database: Database) => {
        while (answering) swept.push(await sweep(database))
      }
      const sweepers = instances.map((instance) => sweeper(instance.database))
      await Promise.all(work.map((run) => run()))
      answering = false
      await Promise.all(sweepers)

      const events = (await feedOf(instanceFor(0), market.token)).filter((event) => ids.includes(event.data.id))
      const providerEvents = (await feedOf(instanceFor(1), provider.token)).filter((event) => event.type.startsWith('reservation.'))
      const histories = new Map<string, string[]>()
      for (const id of ids) {
        const mine = events.filter((event) => event.data.id === id)
        const path = mine.map((event) => event.data.status as string)
        assert.ok(
          [
            ['held', 'confirmed'],
            ['held', 'released'],
            ['held', 'expired'],
            ['held', 'confirmed', 'cancelled'],
          ].some((allowed) => allowed.join() === path.join()),
          `${id}: ${path.join(' → ')}`,
        )
        assert.deepEqual(
          mine.map((event) => [event.type, event.data.version]),
          path.map((status, k) => [`reservation.${status}`, k + 1]),
        )
        assert.deepEqual(
          providerEvents.filter((event) => event.data.id === id).map((event) => event.data),
          mine.map((event) => event.data),
          `${id}: the provider hears the same changes`,
        )
        const read = await call(instanceFor(1), 'GET', `/api/v1/reservations/${id}`, market.token)
        assert.deepEqual([read.body.status, read.body.version], [path.at(-1), path.length], `${id} as read`)
        histories.set(id, path)
      }
      for (const { id, action, by, answer } of sent) {
        const path = histories.get(id) as string[]
        const what = `${id} ${action} by the ${by}: ${answer?.status} ${answer?.text.slice(0, 200)} after ${path.join(' → ')}`
        assert.ok(answer, what)
        if (answer.status === 200) {
          // Its own change, or the one that won before it: a status of the history, with its version.
          const at = path.indexOf(answer.body.status)
          assert.ok(at > 0 && answer.body.version === at + 1, what)
        } else if (action === 'confirm' && path[1] === 'expired') assertProblem(answer, 409, 'reservation-expired')
        else if (action === 'confirm' && path[1] === 'released') assertProblem(answer, 409, 'reservation-closed')
        else if (action === 'release' && path[1] === 'confirmed') assertProblem(answer, 409, 'reservation-closed')
        else assert.fail(what)
      }
      const outcomes = countBy([...histories.values()].map((path) => path.join(' → ')))
      assert.equal(
        swept.reduce((sum, n) => sum + n, 0),
        outcomes.get('held → expired') ?? 0,
        'each expiry recorded once, by one sweeper',
      )
      if (sweeperClock === 'same') assert.deepEqual([...outcomes], [['held → expired', COUNT]])
      // Units of confirmed ones left the quantities; everything else is free again.
      const sold = [0, 0]
      ids.forEach((id, n) => {
        if (histories.get(id)?.at(-1) === 'confirmed') sold[n % 2] = (sold[n % 2] ?? 0) + 2
      })
      const expected = quantities.map((quantity, k) => ({ position: k, quantity: quantity - (sold[k] ?? 0), held: 0, available: quantity - (sold[k] ?? 0) }))
      assert.deepEqual(await stockOf(instances, provider.token, listingId), expected)
      const listingUpdates = (await feedOf(instanceFor(0), provider.token)).filter((e) => e.type === 'listing.updated' && e.data.id === listingId).length
      const changesOfQuantity = [...histories.values()].reduce((sum, path) => sum + path.filter((s) => s === 'confirmed' || s === 'cancelled').length, 0)
      assert.equal(listingUpdates, changesOfQuantity, 'a listing.updated for each confirm and each cancel of a confirmed one')
      const stored = await invariant()
      assert.deepEqual(
        stored.get(listingId)?.quantities,
        expected.map((e) => e.quantity),
      )
      t.diagnostic([...outcomes].map(([path, n]) => `${n} × ${path}`).join('; '))
      service.clock.now = start
    }

    test('confirm, release, cancel by either side and two sweepers at once, the sweepers past the expiry: one transition out of held wins', (t) =>
      endAllAtOnce(t, 'ahead', 36))

    test('the same at the expiry itself: the sweepers record every expiry once, the others answer with it', (t) => endAllAtOnce(t, 'same', 37))
  })
}
