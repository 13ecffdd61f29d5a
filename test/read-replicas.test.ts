import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/connection.js'
import { listingBody } from './fixtures.js'
import { parseJsonOrUndefined } from './helper.js'
import { marketplaceOwner, recordFor, reservationData, reservationEvent } from './owner-events.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'
import { parseExposition, valueOf } from './prometheus-text.js'
import { startPrimaryAndStandby, standbyUnavailable, type PrimaryAndStandby } from './standby-support.js'

/**
 * Issue 27: DATABASE_READ_URL. Two real instances write to a primary and read from a hot standby of this file's
 * own. With the standby's replay paused (the worst case: it never catches up), a provider still never reads an
 * older state than one it was told of, on either instance: a create, then its GET; a PATCH, then GET and
 * If-None-Match; the feed's cursor; and a withdrawal leaves discovery at once. A marketplace reads its own stream
 * as a provider does, and its reservations and a listing's stock are always read on the primary: a hold, then its
 * reads on the other instance. A provider or marketplace that wrote nothing since is still read from the standby.
 */

after(killAll)

test('DATABASE_READ_URL with a SQLite DATABASE_URL is refused, naming both', () => {
  assert.throws(
    () => loadConfig({ DATABASE_URL: 'sqlite::memory:', DATABASE_READ_URL: 'postgres://127.0.0.1/listing' }),
    /DATABASE_READ_URL needs a PostgreSQL DATABASE_URL/,
  )
  assert.throws(
    () => loadConfig({ DATABASE_URL: 'postgres://127.0.0.1/listing', DATABASE_READ_URL: 'sqlite:./x.db' }),
    /^ConfigError: DATABASE_READ_URL must be/,
  )
})

const skip = standbyUnavailable()
if (skip) console.warn(`\n!!!!! ${skip}: the standby tests of test/read-replicas.test.ts are SKIPPED !!!!!\n`)

interface Answer {
  status: number
  body: any
  headers: Headers
}

async function call(
  server: ServerProcess,
  method: string,
  path: string,
  token?: string,
  options: { json?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(options.json === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    body: options.json === undefined ? undefined : JSON.stringify(options.json),
  })
  return { status: response.status, body: parseJsonOrUndefined(await response.text()), headers: response.headers }
}

/** How many reads meant for the standby `server` has answered so far, by who answered. */
async function replicaReads(server: ServerProcess): Promise<Record<'replica' | 'primary-behind' | 'primary-failed', number>> {
  const exposition = parseExposition(await (await fetch(`${server.baseUrl}/metrics`)).text())
  const count = (outcome: string) => valueOf(exposition, 'listing_replica_reads_total', { outcome }) ?? NaN
  return { replica: count('replica'), 'primary-behind': count('primary-behind'), 'primary-failed': count('primary-failed') }
}

/** The change in `server`'s replica read counts while `work` runs. */
async function readsDuring(server: ServerProcess, work: () => Promise<void>) {
  const before = await replicaReads(server)
  await work()
  const afterwards = await replicaReads(server)
  return {
    replica: afterwards.replica - before.replica,
    behind: afterwards['primary-behind'] - before['primary-behind'],
    failed: afterwards['primary-failed'] - before['primary-failed'],
  }
}

const NEAR = { latitude: 24.7136, longitude: 46.6753 }
const discoverPath = `/api/v1/discover?latitude=${NEAR.latitude}&longitude=${NEAR.longitude}&radiusKm=5&limit=50`

describe('two instances reading from a standby (DATABASE_READ_URL)', { skip }, () => {
  let clusters: PrimaryAndStandby | undefined
  let servers: ServerProcess[] = []
  let writer: ServerProcess
  let reader: ServerProcess
  let provider: string
  let quiet: string
  let marketplace: string
  let marketplaceId: string
  let quietMarketplace: string
  /** On the standby before its replay is paused: discoverable, then withdrawn. */
  let withdrawnLater: string
  let stillActive: string
  let quietListing: string

  before(async () => {
    clusters = await startPrimaryAndStandby()
    await clusters.query('primary', 'create database listing')
    const env = { DATABASE_URL: clusters.primaryUrl('listing') }
    const migrated = await runCli(['migrate'], env)
    assert.equal(migrated.code, 0, migrated.stderr)
    const cli = async (args: string[]) => {
      const result = await runCli(args, env)
      assert.equal(result.code, 0, result.stderr)
      return JSON.parse(result.stdout) as { id: string; token: string }
    }
    provider = (await cli(['provider', 'create', '--name', 'Busy Bakery'])).token
    quiet = (await cli(['provider', 'create', '--name', 'Quiet Bakery'])).token
    ;({ token: marketplace, id: marketplaceId } = await cli(['marketplace', 'create', '--name', 'Deals']))
    quietMarketplace = (await cli(['marketplace', 'create', '--name', 'Quiet Deals'])).token
    servers = await Promise.all([0, 1].map(() => startServer({ ...env, DATABASE_READ_URL: clusters?.standbyUrl('listing') }, { args: ['--no-migrate'] })))
    ;[writer, reader] = servers as [ServerProcess, ServerProcess]
    const create = async (token: string) => {
      const created = await call(writer, 'POST', '/api/v1/listing/create', token, { json: listingBody({ location: NEAR }) })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      return created.body.listingId as string
    }
    withdrawnLater = await create(provider)
    stillActive = await create(provider)
    quietListing = await create(quiet)
    await recordForMarketplace(1)
    await clusters.caughtUp()
  })
  after(async () => {
    await Promise.all(servers.map((server) => server.stop('SIGKILL')))
    await clusters?.remove()
  })

  /** Events of the marketplace's stream committed on the primary, as a reservation's change will commit them. */
  async function recordForMarketplace(version: number) {
    const database = openDatabase(clusters?.primaryUrl('listing') as string)
    try {
      const data = reservationData({ id: marketplaceId, name: 'Deals' }, 'prv_x', { id: 'rsv_replica', version })
      await recordFor(database, marketplaceOwner(marketplaceId), Date.now(), [reservationEvent('reservation.held', data)])
    } finally {
      await database.close()
    }
  }

  test('/readyz names the primary and the standby; a caught-up standby answers the reads', async () => {
    for (const server of servers) {
      const ready = await call(server, 'GET', '/readyz')
      assert.equal(ready.status, 200)
      assert.deepEqual(ready.body, { status: 'ready', database: 'primary', readDatabase: 'standby' })
    }
    const reads = await readsDuring(reader, async () => {
      assert.equal((await call(reader, 'GET', `/api/v1/listing/${stillActive}`, provider)).status, 200)
      assert.equal((await call(reader, 'GET', '/api/v1/listing', provider)).body.recordCount, 2)
      assert.equal((await call(reader, 'GET', '/api/v1/events', provider)).body.data.length, 2)
      assert.equal((await call(reader, 'GET', '/api/v1/events', marketplace)).body.data.length, 1)
    })
    assert.deepEqual(reads, { replica: 4, behind: 0, failed: 0 })
  })

  describe('with the standby paused: it never replays what follows', () => {
    before(async () => {
      await clusters?.pauseReplay()
    })
    after(async () => {
      await clusters?.resumeReplay()
    })

    test('a create, then a GET on the other instance: found, by id, by reference and on page 1', async () => {
      const body = listingBody({ location: NEAR })
      const created = await call(writer, 'POST', '/api/v1/listing/create', provider, { json: body })
      assert.equal(created.status, 201)
      const { listingId } = created.body
      const reads = await readsDuring(reader, async () => {
        const byId = await call(reader, 'GET', `/api/v1/listing/${listingId}`, provider)
        assert.equal(byId.status, 200, JSON.stringify(byId.body))
        assert.equal(byId.body.referenceId, body.referenceId)
        const byReference = await call(reader, 'GET', `/api/v1/listing/by-reference/${encodeURIComponent(body.referenceId)}`, provider)
        assert.equal(byReference.status, 200)
        assert.equal(byReference.body.id, listingId)
        const page = await call(reader, 'GET', '/api/v1/listing', provider)
        assert.equal(page.body.recordCount, 3)
        assert.equal(page.body.content[0].id, listingId)
      })
      // The standby was asked and found behind each time: the answers came from the primary.
      assert.deepEqual(reads, { replica: 0, behind: 3, failed: 0 })
    })

    test('a PATCH, then GET and If-None-Match on the other instance: the new version, never the old body', async () => {
      const patched = await call(writer, 'PATCH', `/api/v1/listing/${stillActive}`, provider, { json: { items: [{ position: 0, quantity: 7 }] } })
      assert.equal(patched.status, 200)
      const etag = patched.headers.get('etag') as string
      assert.equal(etag, '"2"')
      const read = await call(reader, 'GET', `/api/v1/listing/${stillActive}`, provider)
      assert.equal(read.headers.get('etag'), etag)
      assert.equal(read.body.items[0].quantity, 7)
      const conditional = await call(reader, 'GET', `/api/v1/listing/${stillActive}`, provider, { headers: { 'if-none-match': etag } })
      assert.equal(conditional.status, 304)
      // A page's tag, taken from the writer's instance, is current on the reader's too.
      const page = await call(writer, 'GET', '/api/v1/listing', provider)
      const again = await call(reader, 'GET', '/api/v1/listing', provider, { headers: { 'if-none-match': page.headers.get('etag') as string } })
      assert.equal(again.status, 304)
    })

    test('the feed: a cursor the standby has not replayed is followed, never refused; no event is missing', async () => {
      const all = await call(writer, 'GET', '/api/v1/events', provider)
      assert.equal(all.status, 200)
      const ids = all.body.data.map((event: { id: string }) => event.id)
      assert.equal(ids.length, 4) // three creates and the PATCH
      const last = ids.at(-1) as string
      const next = await call(reader, 'GET', `/api/v1/events?after=${last}`, provider)
      assert.equal(next.status, 200, JSON.stringify(next.body))
      assert.deepEqual(next.body, { data: [], nextCursor: null })
      const fromStart = await call(reader, 'GET', '/api/v1/events', provider)
      assert.deepEqual(
        fromStart.body.data.map((event: { id: string }) => event.id),
        ids,
      )
      const fromSecond = await call(reader, 'GET', `/api/v1/events?after=${ids[1] as string}`, provider)
      assert.deepEqual(
        fromSecond.body.data.map((event: { id: string }) => event.id),
        ids.slice(2),
      )
    })

    test('a withdrawal leaves discovery on the other instance at once', async () => {
      const found = (answer: Answer) => answer.body.data.map((hit: { listing: { id: string } }) => hit.listing.id)
      const before = await call(reader, 'GET', discoverPath, marketplace)
      assert.equal(before.status, 200)
      assert.ok(found(before).includes(withdrawnLater))
      const withdrawn = await call(writer, 'POST', `/api/v1/listing/${withdrawnLater}/withdraw`, provider)
      assert.equal(withdrawn.status, 200)
      const afterwards = await call(reader, 'GET', discoverPath, marketplace)
      assert.equal(afterwards.status, 200)
      assert.ok(!found(afterwards).includes(withdrawnLater), JSON.stringify(afterwards.body))
      assert.ok(found(afterwards).includes(stillActive))
      assert.ok(found(afterwards).includes(quietListing))
      const direct = await call(reader, 'GET', `/api/v1/listing/${withdrawnLater}`, provider)
      assert.equal(direct.body.status, 'withdrawn')
    })

    test('a marketplace’s stream: what it was told of is never missing on the other instance; a cursor the standby lacks is followed', async () => {
      await recordForMarketplace(2)
      const reads = await readsDuring(reader, async () => {
        const all = await call(reader, 'GET', '/api/v1/events', marketplace)
        assert.equal(all.status, 200)
        assert.deepEqual(
          all.body.data.map((event: { data: { version: number } }) => event.data.version),
          [1, 2],
        )
        const next = await call(reader, 'GET', `/api/v1/events?after=${all.body.data[1].id as string}`, marketplace)
        assert.deepEqual([next.status, next.body], [200, { data: [], nextCursor: null }])
      })
      assert.deepEqual(reads, { replica: 0, behind: 2, failed: 0 })
    })

    test('a provider or a marketplace that wrote nothing since is still read from the standby', async () => {
      const reads = await readsDuring(reader, async () => {
        const read = await call(reader, 'GET', `/api/v1/listing/${quietListing}`, quiet)
        assert.equal(read.status, 200)
        assert.equal((await call(reader, 'GET', '/api/v1/listing', quiet)).body.recordCount, 1)
        assert.deepEqual((await call(reader, 'GET', '/api/v1/events', quietMarketplace)).body, { data: [], nextCursor: null })
      })
      assert.deepEqual(reads, { replica: 3, behind: 0, failed: 0 })
    })

    test('a marketplace holds units, then reads and confirms the hold on the other instance: its reservation and the stock, never the standby', async () => {
      const made = await call(writer, 'POST', '/api/v1/reservations', marketplace, {
        json: { listingId: stillActive, referenceId: 'basket-replica', items: [{ position: 0, quantity: 2 }] },
      })
      assert.equal(made.status, 201, JSON.stringify(made.body))
      const id = made.body.id as string
      const reads = await readsDuring(reader, async () => {
        const read = await call(reader, 'GET', `/api/v1/reservations/${id}`, marketplace)
        assert.equal(read.status, 200, JSON.stringify(read.body))
        assert.deepEqual(read.body, made.body)
        const page = await call(reader, 'GET', `/api/v1/reservations?listingId=${stillActive}`, marketplace)
        assert.deepEqual(
          page.body.data.map((reservation: { id: string }) => reservation.id),
          [id],
        )
        const stock = await call(reader, 'GET', `/api/v1/listing/${stillActive}/stock`, marketplace)
        assert.deepEqual(stock.body.items, [{ position: 0, quantity: 7, held: 2, available: 5 }])
        // The provider of the listing sees it at once too.
        assert.equal((await call(reader, 'GET', `/api/v1/reservations/${id}`, provider)).status, 200)
      })
      // Not even asked: a reservation's reads go to the primary.
      assert.deepEqual(reads, { replica: 0, behind: 0, failed: 0 })
      const confirmed = await call(reader, 'POST', `/api/v1/reservations/${id}/confirm`, marketplace, { headers: { 'if-match': '"1"' } })
      assert.deepEqual([confirmed.status, confirmed.body.status], [200, 'confirmed'])
      const again = await call(writer, 'GET', `/api/v1/reservations/${id}`, marketplace)
      assert.deepEqual([again.body.status, again.body.version], ['confirmed', 2])
      // Its stream, read on either instance, has both changes; the standby is behind it.
      for (const server of servers) {
        const feed = await call(server, 'GET', '/api/v1/events?limit=100', marketplace)
        assert.deepEqual(
          feed.body.data.filter((event: { data: { id: string } }) => event.data.id === id).map((event: { type: string }) => event.type),
          ['reservation.held', 'reservation.confirmed'],
        )
      }
    })
  })

  test('replay resumed: the standby answers again once it has caught up', async () => {
    await clusters?.caughtUp()
    const reads = await readsDuring(reader, async () => {
      assert.equal((await call(reader, 'GET', '/api/v1/listing', provider)).body.recordCount, 3)
    })
    assert.deepEqual(reads, { replica: 1, behind: 0, failed: 0 })
  })

  test('the standby stopped: reads are answered by the primary, and the instance stays ready', async () => {
    await clusters?.stopStandby()
    const reads = await readsDuring(reader, async () => {
      assert.equal((await call(reader, 'GET', `/api/v1/listing/${stillActive}`, provider)).status, 200)
      assert.equal((await call(reader, 'GET', discoverPath, marketplace)).status, 200)
    })
    // The GET, and each of discovery's candidate queries (one or more, as its circle widens).
    assert.equal(reads.replica + reads.behind, 0)
    assert.ok(reads.failed >= 2, JSON.stringify(reads))
    const ready = await call(reader, 'GET', '/readyz')
    assert.equal(ready.status, 200)
    assert.deepEqual(ready.body, { status: 'ready', database: 'primary', readDatabase: 'unavailable' })
  })
})
