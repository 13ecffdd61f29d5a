import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { isDatabaseUnavailable } from '../src/db/dialect.js'
import { listingBody } from './fixtures.js'
import { createTestDatabase, parseJsonOrUndefined, testDialects, TEST_POSTGRES_URL, type TestDatabase } from './helper.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'

/**
 * Issue 27: an instance on a server that takes no writes (a hot standby, or a primary set read-only during a
 * failover) starts with `serve --no-migrate`, serves reads, and answers writes 503 with Retry-After; `serve`
 * without the flag refuses to start there, and `--no-migrate` refuses a database lacking migrations. The
 * read-only server is a database with default_transaction_read_only on: the same 25006 a standby raises.
 */

after(killAll)

const dialects = await testDialects()

test('errors of a read-only or recovering PostgreSQL are "unavailable" (503); other rollbacks are not', () => {
  for (const code of ['25006', '40001', '40P01']) assert.ok(isDatabaseUnavailable({ code }), code)
  for (const code of ['40002', '23505', '42P05', '26000', '25001']) assert.ok(!isDatabaseUnavailable({ code }), code)
})

async function call(server: ServerProcess, method: string, path: string, token?: string, json?: unknown) {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: json === undefined ? undefined : JSON.stringify(json),
  })
  return { status: response.status, headers: response.headers, body: parseJsonOrUndefined(await response.text()) as any }
}

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

describe('serve --no-migrate', { skip: !dialects.includes('postgres') && 'PostgreSQL does not answer' }, () => {
  const databases: TestDatabase[] = []
  after(async () => {
    for (const database of databases) await database.drop()
  })

  test('on a database lacking migrations: exits 1 before listening, naming them', async () => {
    const database = await createTestDatabase('postgres')
    databases.push(database)
    await assert.rejects(startServer({ DATABASE_URL: database.url }, { args: ['--no-migrate'] }), (error: Error) => {
      assert.match(error.message, /started with --no-migrate, but the database lacks migrations: 2026-11-21-initial, .*run `listing-service migrate` first/)
      return true
    })
  })

  describe('on a read-only server', () => {
    let database: TestDatabase
    let server: ServerProcess
    let token: string
    let listingId: string

    before(async () => {
      database = await createTestDatabase('postgres')
      databases.push(database)
      const migrated = await runCli(['migrate'], { DATABASE_URL: database.url })
      assert.equal(migrated.code, 0, migrated.stderr)
      const created = await runCli(['provider', 'create', '--name', 'Standby Bakery'], { DATABASE_URL: database.url })
      assert.equal(created.code, 0, created.stderr)
      ;({ token } = JSON.parse(created.stdout))
      const writer = await startServer({ DATABASE_URL: database.url })
      const listing = await call(writer, 'POST', '/api/v1/listing/create', token, listingBody())
      assert.equal(listing.status, 201)
      listingId = listing.body.listingId
      await writer.stop()
      const name = new URL(database.url).pathname.slice(1)
      await admin(`alter database ${name} set default_transaction_read_only = on`)
    })
    after(async () => {
      await server?.stop('SIGKILL')
    })

    test('plain serve exits, since migrating writes', async () => {
      await assert.rejects(startServer({ DATABASE_URL: database.url }), /read-only transaction/)
    })

    test('with --no-migrate: reads answer, writes are 503 with Retry-After, /readyz is ready', async () => {
      server = await startServer({ DATABASE_URL: database.url }, { args: ['--no-migrate'] })
      const page = await call(server, 'GET', '/api/v1/listing', token)
      assert.equal(page.status, 200)
      assert.deepEqual(
        page.body.content.map((listing: any) => listing.id),
        [listingId],
      )
      assert.equal((await call(server, 'GET', `/api/v1/listing/${listingId}`, token)).status, 200)
      for (const write of [
        call(server, 'POST', '/api/v1/listing/create', token, listingBody()),
        call(server, 'PATCH', `/api/v1/listing/${listingId}`, token, { items: [{ position: 0, quantity: 3 }] }),
      ]) {
        const answer = await write
        assert.equal(answer.status, 503, JSON.stringify(answer.body))
        assert.equal(answer.body.type, '/problems/unavailable')
        assert.equal(answer.headers.get('retry-after'), '5')
      }
      const warned = server.logLines().filter((line) => line.msg === 'database unavailable')
      assert.ok(
        warned.some((line) => line.err?.code === '25006'),
        'the log names the cause',
      )
      const ready = await call(server, 'GET', '/readyz')
      assert.deepEqual([ready.status, ready.body], [200, { status: 'ready', database: 'primary' }])
    })
  })
})
