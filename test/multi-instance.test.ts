import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { listingBody } from './fixtures.js'
import { createTestDatabase, parseJsonOrUndefined, testDialects, type TestDatabase } from './helper.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'

/**
 * Issue 6 and docs/operations.md#several-instances: two real processes on one PostgreSQL database behave as one service. Nothing here
 * may rely on state inside one process: idempotency, revocation and migrations must hold across both.
 */

after(killAll)

const dialects = await testDialects()

interface Answer {
  status: number
  body: any
}

async function call(server: ServerProcess, method: string, path: string, token: string, json?: unknown): Promise<Answer> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  })
  return { status: response.status, body: parseJsonOrUndefined(await response.text()) }
}

async function count(url: string, query: string, values: unknown[] = []): Promise<number> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return Number((await client.query(query, values)).rows[0].n)
  } finally {
    await client.end()
  }
}

/** A provider's whole feed after `after`, through one instance. */
async function readFeed(server: ServerProcess, token: string, after?: string): Promise<any[]> {
  const events: any[] = []
  for (let cursor = after; ;) {
    const page = await call(server, 'GET', `/api/v1/events?limit=100${cursor ? `&after=${cursor}` : ''}`, token)
    assert.equal(page.status, 200, JSON.stringify(page.body))
    if (page.body.data.length === 0) return events
    events.push(...page.body.data)
    cursor = page.body.nextCursor
  }
}

describe('two instances on one PostgreSQL database', { skip: !dialects.includes('postgres') && 'PostgreSQL does not answer' }, () => {
  let database: TestDatabase
  let servers: ServerProcess[]
  let token: string
  let tokenId: string

  before(async () => {
    database = await createTestDatabase('postgres')
    // Started at the same moment on an empty database: both migrate, one waits on the other's lock.
    servers = await Promise.all([startServer({ DATABASE_URL: database.url }), startServer({ DATABASE_URL: database.url })])
    const created = await runCli(['provider', 'create', '--name', 'Two Ovens'], { DATABASE_URL: database.url })
    assert.equal(created.code, 0, created.stderr)
    ;({ token, tokenId } = JSON.parse(created.stdout))
  })
  after(async () => {
    await Promise.all((servers ?? []).map((server) => server.stop('SIGKILL')))
    await database?.drop()
  })

  test('both started and migrated at the same moment: both serve, each migration applied once', async () => {
    const migrations = await count(database.url, 'select count(*) as n from schema_migrations')
    const distinct = await count(database.url, 'select count(distinct name) as n from schema_migrations')
    assert.ok(migrations > 0)
    assert.equal(migrations, distinct)
    const applied = servers.flatMap((server) => server.logLines().filter((line) => line.msg === 'database migrated'))
    assert.equal(applied.length, 1, 'exactly one of the two applied the migrations; the other found nothing to do')
    for (const server of servers) assert.equal((await call(server, 'GET', '/readyz', token)).status, 200)
  })

  test('40 concurrent identical creates split across both store one listing, and every answer names it', async () => {
    const body = listingBody({}, 3)
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => call(servers[i % 2] as ServerProcess, 'POST', '/api/v1/listing/create', token, body)),
    )
    const statuses = answers.map((answer) => answer.status)
    assert.equal(statuses.filter((status) => status === 201).length, 1, statuses.join(','))
    assert.equal(statuses.filter((status) => status === 200).length, 39, statuses.join(','))
    assert.equal(new Set(answers.map((answer) => answer.body.listingId)).size, 1)
    const stored = await count(database.url, 'select count(*) as n from listings where reference_id = $1', [body.referenceId])
    assert.equal(stored, 1)
    for (const server of servers) {
      const page = await call(server, 'GET', '/api/v1/listing', token)
      assert.equal(page.body.content.filter((listing: any) => listing.referenceId === body.referenceId).length, 1)
    }
  })

  test('concurrent creates with one referenceId and different bodies across both: one stored, the rest 409', async () => {
    const first = listingBody()
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call(servers[i % 2] as ServerProcess, 'POST', '/api/v1/listing/create', token, {
          ...first,
          location: { latitude: i, longitude: i },
        }),
      ),
    )
    const statuses = answers.map((answer) => answer.status).sort()
    assert.deepEqual(statuses, [201, ...Array(9).fill(409)])
    assert.equal(await count(database.url, 'select count(*) as n from listings where reference_id = $1', [first.referenceId]), 1)
  })

  test('20 PATCHes of one listing split across both: 20 distinct versions, the final state is the highest’s', async () => {
    const created = await call(servers[0] as ServerProcess, 'POST', '/api/v1/listing/create', token, listingBody())
    assert.equal(created.status, 201)
    const path = `/api/v1/listing/${created.body.listingId}`
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(servers[i % 2] as ServerProcess, 'PATCH', path, token, { items: [{ position: 0, quantity: 100 + i }] })),
    )
    for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const versions = answers.map((answer) => answer.body.version).sort((a, b) => a - b)
    assert.deepEqual(
      versions,
      Array.from({ length: 20 }, (_, i) => i + 2),
    )
    const highest = answers.find((answer) => answer.body.version === 21)
    for (const server of servers) {
      const read = await call(server, 'GET', path, token)
      assert.equal(read.body.version, 21)
      assert.equal(read.body.items[0].quantity, highest?.body.items[0].quantity)
    }
  })

  test('PATCHes racing a withdrawal across both never revive it', async () => {
    const created = await call(servers[0] as ServerProcess, 'POST', '/api/v1/listing/create', token, listingBody())
    const path = `/api/v1/listing/${created.body.listingId}`
    const patches = Array.from({ length: 10 }, (_, i) =>
      call(servers[i % 2] as ServerProcess, 'PATCH', path, token, { items: [{ position: 0, quantity: 50 + i }] }),
    )
    const withdrawal = call(servers[1] as ServerProcess, 'POST', `${path}/withdraw`, token)
    const answers = await Promise.all(patches)
    const withdrawn = await withdrawal
    assert.equal(withdrawn.status, 200)
    for (const answer of answers) {
      if (answer.status === 200) assert.ok(answer.body.version < withdrawn.body.version, JSON.stringify(answer.body))
      else assert.equal(answer.status, 409, JSON.stringify(answer.body))
    }
    for (const server of servers) assert.equal((await call(server, 'GET', path, token)).body.status, 'withdrawn')
  })

  test('the event feed while both write: every event once, in one order both instances serve', async () => {
    const listings = await Promise.all(
      Array.from({ length: 4 }, (_, i) => call(servers[i % 2] as ServerProcess, 'POST', '/api/v1/listing/create', token, listingBody())),
    )
    const before = await readFeed(servers[0] as ServerProcess, token)
    const writes = []
    for (let round = 0; round < 8; round++) {
      for (const [k, listing] of listings.entries()) {
        writes.push(
          call(servers[(round + k) % 2] as ServerProcess, 'PATCH', `/api/v1/listing/${listing.body.listingId}`, token, {
            items: [{ position: 0, quantity: round * 10 + k + 2 }],
          }),
        )
      }
      writes.push(call(servers[round % 2] as ServerProcess, 'POST', '/api/v1/listing/create', token, listingBody()))
    }
    // A reader follows the feed on one instance while the writes go to both.
    const followed: string[] = []
    let after = before.at(-1)?.id
    const done = Promise.all(writes)
    for (let settled = false; !settled;) {
      settled = await Promise.race([done.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5))])
      const page = await call(servers[1] as ServerProcess, 'GET', `/api/v1/events?limit=9${after ? `&after=${after}` : ''}`, token)
      followed.push(...page.body.data.map((event: any) => event.id))
      after = page.body.nextCursor ?? after
    }
    for (const answer of await done) assert.ok([200, 201].includes(answer.status), JSON.stringify(answer.body))
    const rest = await readFeed(servers[1] as ServerProcess, token, after)
    followed.push(...rest.map((event) => event.id))
    const all = (await readFeed(servers[0] as ServerProcess, token)).slice(before.length)
    assert.equal(all.length, 8 * 4 + 8)
    assert.deepEqual(
      followed,
      all.map((event) => event.id),
    )
  })

  test('a token revoked through the CLI is refused by both instances within 5 s', async () => {
    // Both have just accepted it, so each holds it in its cache of valid tokens.
    for (const server of servers) assert.equal((await call(server, 'GET', '/api/v1/listing', token)).status, 200)
    const revoked = await runCli(['token', 'revoke', tokenId], { DATABASE_URL: database.url })
    assert.equal(revoked.code, 0, revoked.stderr)
    const revokedAt = Date.now()
    const refusedAfter = await Promise.all(
      servers.map(async (server) => {
        for (;;) {
          const { status } = await call(server, 'GET', '/api/v1/listing', token)
          if (status === 401) return Date.now() - revokedAt
          assert.equal(status, 200)
          assert.ok(Date.now() - revokedAt < 5000, `${server.baseUrl} still accepts the revoked token after 5 s`)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      }),
    )
    for (const ms of refusedAfter) assert.ok(ms <= 5000, `refused after ${ms} ms`)
    // And it stays refused.
    for (const server of servers) assert.equal((await call(server, 'GET', '/api/v1/listing', token)).status, 401)
  })
})

describe('two instances recording expiries on one PostgreSQL database', { skip: !dialects.includes('postgres') && 'PostgreSQL does not answer' }, () => {
  let database: TestDatabase
  let servers: ServerProcess[]

  before(async () => {
    database = await createTestDatabase('postgres')
    const env = { DATABASE_URL: database.url, LISTING_TTL_TIMED_SECONDS: '2' }
    servers = await Promise.all([startServer(env), startServer(env)])
  })
  after(async () => {
    await Promise.all((servers ?? []).map((server) => server.stop('SIGKILL')))
    await database?.drop()
  })

  test('each expiry is recorded once, by one of them, within 10 s of expiresAtUnix', async () => {
    const created = await runCli(['provider', 'create', '--name', 'Short Lived'], { DATABASE_URL: database.url })
    const { token } = JSON.parse(created.stdout)
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => call(servers[i % 2] as ServerProcess, 'POST', '/api/v1/listing/create', token, listingBody())),
    )
    for (const answer of answers) assert.equal(answer.status, 201)
    const latestExpiry = Math.max(...answers.map((answer) => answer.body.expiresAtUnix))
    const expired = async () => (await readFeed(servers[0] as ServerProcess, token)).filter((event) => event.type === 'listing.expired')
    while ((await expired()).length < 30) {
      assert.ok(Date.now() < (latestExpiry + 10) * 1000, `only ${(await expired()).length} of 30 expiries recorded 10 s after the last expiresAtUnix`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    // Both keep sweeping: still exactly one each, a few sweeps later.
    await new Promise((resolve) => setTimeout(resolve, 4500))
    const events = await expired()
    assert.equal(events.length, 30)
    assert.equal(new Set(events.map((event) => event.data.id)).size, 30)
    for (const event of events) {
      assert.equal(event.data.version, 2)
      assert.ok(
        Date.parse(event.createdAt) <= ((event.data.expiresAtUnix as number) + 10) * 1000,
        `${event.createdAt} is over 10 s after ${event.data.expiresAtUnix}`,
      )
    }
  })
})
