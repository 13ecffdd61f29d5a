import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { listingBody } from './fixtures.js'
import { createTestDatabase, parseJsonOrUndefined, testDialects, type TestDatabase } from './helper.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'

/**
 * Issue 6 and contract §9: two real processes on one PostgreSQL database behave as one service. Nothing here
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
