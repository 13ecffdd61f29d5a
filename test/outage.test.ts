import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { closeSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { openDatabase } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../src/errors.js'
import { item, listingBody } from './fixtures.js'
import {
  createTestDatabase,
  readResponse,
  startService,
  testDialects,
  TEST_POSTGRES_URL,
  type Response,
  type TestProvider,
  type TestService,
} from './helper.js'
import { assertProblem, countItems, countListings } from './http-support.js'
import { killAll, runCli, startServer } from './process.js'
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js'

/**
 * docs/api.md#errors `/problems/unavailable`: a database that is down, silent, locked, read-only or full answers 503
 * (never a 500, never a hang), stores nothing, and the service recovers without a restart. PostgreSQL outages
 * are made by a TCP proxy in this process (the shared server itself is never touched); SQLite ones by another
 * connection holding the write lock, and by pragmas on the service's own connection.
 */

after(killAll)

const dialects = await testDialects()

/**
 * A generous bound on how long an outage may take to answer: the service's own bounds are 5 s to connect and
 * 7 s per query (src/db/connection.ts), and this machine is shared. A hang would exceed it by far.
 */
const ANSWER_BOUND_MS = 25_000

/** What a 503 body may never contain: SQL, table names, driver words, addresses, file paths, stacks. */
const LEAKS = ['select', 'insert', 'listing', 'sqlite', 'postgres', 'econn', 'terminated', 'timeout', '127.0.0.1', '5432', '/tmp', '.ts', '.js', 'at ']

function assertUnavailable(response: Response): void {
  assertProblem(response, 503, 'unavailable')
  assert.equal(response.headers.get('retry-after'), String(UNAVAILABLE_RETRY_AFTER_SECONDS))
  const text = response.text.toLowerCase()
  for (const leak of LEAKS) assert.ok(!text.includes(leak), `the 503 body mentions "${leak}": ${response.text}`)
}

/** Runs `send` and fails if it takes longer than ANSWER_BOUND_MS (a hang), without waiting for it forever. */
async function answeredInTime(send: () => Promise<Response>): Promise<Response> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ANSWER_BOUND_MS} ms: the request hangs`)), ANSWER_BOUND_MS)
  })
  try {
    return await Promise.race([send(), late])
  } finally {
    clearTimeout(timer)
  }
}

/** POST /api/v1/listing/create to a service running as a process. */
async function postListing(baseUrl: string, token: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return readResponse(
    await fetch(`${baseUrl}/api/v1/listing/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    }),
  )
}

// ---- PostgreSQL: through a proxy we can cut (test/tcp-proxy.ts) ----------------------------------------------

/** Counts read straight from the test database, past the proxy. */
async function storedCounts(databaseUrl: string): Promise<{ listings: number; items: number; counters: number }> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const { rows } = await client.query(`select
      (select count(*) from listings)::int as listings,
      (select coalesce(sum(json_array_length(items_record::json)), 0) from listings)::int as items,
      (select coalesce(sum(listing_count), 0)::int from providers) as counters`)
    return rows[0]
  } finally {
    await client.end()
  }
}

if (dialects.includes('postgres')) {
  describe('PostgreSQL outage, through a proxy [postgres]', () => {
    let proxy: TcpProxy
    const service = {} as TestService
    let cached: TestProvider
    let uncached: TestProvider
    let created = 0

    /** After an outage, without a restart: a create of `itemCount` items is stored and counted. */
    async function assertCreatesAgain(itemCount: number): Promise<void> {
      const again = await service.create(cached.token, listingBody({}, itemCount))
      assert.equal(again.status, 201, again.text)
      created += 1
      const listed = await service.list(cached.token)
      assert.equal(listed.status, 200, listed.text)
      assert.equal(listed.body.recordCount, created)
    }

    before(async () => {
      proxy = await startTcpProxy(TEST_POSTGRES_URL, { defaultPort: 5432 })
      Object.assign(service, await startService('postgres', { connectVia: (url) => proxy.via(url) }))
      cached = await service.newProvider()
      // Its token is first used during an outage, so authentication itself must ask the database.
      uncached = await service.newProvider()
      assert.equal((await service.create(cached.token, listingBody({}, 2))).status, 201)
      created += 1
      assert.equal((await service.list(cached.token)).status, 200)
    })
    after(async () => {
      proxy?.forward({ closeHeld: true })
      await service.close?.()
      await proxy?.close()
    })

    // First, while the pool holds few connections: each silenced one costs one 503 before it is dropped.
    test('a connection that went silent is dropped after its timeout: the next request gets a new one', async () => {
      proxy.silenceExisting()
      try {
        assertUnavailable(await answeredInTime(() => service.create(cached.token, listingBody())))
        // Had the timed-out client gone back to the pool, the next request would take it again (the pool reuses
        // the most recently released one) and fail the same way, every time.
        let answer: Response | undefined
        for (let attempt = 0; attempt < 3 && answer?.status !== 201; attempt += 1) {
          answer = await answeredInTime(() => service.create(cached.token, listingBody()))
        }
        assert.equal(answer?.status, 201, answer?.text)
        created += 1
      } finally {
        proxy.forward({ closeHeld: true })
      }
    })

    test('database down: create, list and authentication answer 503, /readyz 503, nothing stored; then it recovers', async () => {
      const before = await storedCounts(service.databaseUrl)
      proxy.refuse()
      try {
        const failedCreate = await answeredInTime(() =>
          service.request('POST', '/api/v1/listing/create', {
            token: cached.token,
            json: listingBody({}, 3),
            headers: { 'x-request-id': 'outage-create' },
          }),
        )
        assertUnavailable(failedCreate)
        assert.equal(failedCreate.headers.get('x-request-id'), 'outage-create')
        assertUnavailable(await answeredInTime(() => service.list(cached.token)))
        assertUnavailable(await answeredInTime(() => service.list(uncached.token)))
        assertUnavailable(await answeredInTime(() => service.create(uncached.token, listingBody())))
        assertProblem(await answeredInTime(() => service.request('GET', '/readyz')), 503, 'unavailable')
        assert.equal((await service.request('GET', '/healthz')).status, 200)
      } finally {
        proxy.forward()
      }
      assert.deepEqual(await storedCounts(service.databaseUrl), before)

      // Same process, same pool: broken connections were dropped and new ones prepare their statements again.
      assert.equal((await service.request('GET', '/readyz')).status, 200)
      await assertCreatesAgain(3)
      const other = await service.list(uncached.token)
      assert.equal(other.status, 200, other.text)
      assert.equal(other.body.recordCount, 0)
    })

    test('database silent (accepts, never answers): requests end as 503 in bounded time, then it recovers', async () => {
      const before = await storedCounts(service.databaseUrl)
      // A warm connection in the pool, so the silent server is met on an open connection as well as on new ones.
      assert.equal((await service.list(cached.token)).status, 200)
      // Past the token cache, so authentication asks the (silent) database too.
      service.clock.now += 60_000
      proxy.stall()
      try {
        // At once: each waits out a timeout, and a hang would show in any of them.
        const [create, list, ready] = await Promise.all([
          answeredInTime(() => service.create(cached.token, listingBody({}, 100))),
          answeredInTime(() => service.list(uncached.token)),
          answeredInTime(() => service.request('GET', '/readyz')),
        ])
        assertUnavailable(create)
        assertUnavailable(list)
        assertProblem(ready, 503, 'unavailable')
      } finally {
        proxy.forward({ closeHeld: true })
      }
      assert.deepEqual(await storedCounts(service.databaseUrl), before)

      await assertCreatesAgain(100)
    })
  })

  describe('PostgreSQL time bounds spare migrations [postgres]', () => {
    test("a migration waiting longer than the request bounds for another instance's migration lock still succeeds", async () => {
      const testDatabase = await createTestDatabase('postgres')
      const database = openDatabase(testDatabase.url)
      const holder = new pg.Client({ connectionString: testDatabase.url })
      try {
        await migrate(database)
        await holder.connect()
        // Another instance migrating: it holds the migration lock (dialect.ts beginExclusive) past both bounds.
        await holder.query('begin')
        await holder.query('select pg_advisory_xact_lock(7305196381042)')
        const waiting = migrate(database)
        const outcome = await Promise.race([
          waiting.then(
            () => 'finished',
            (error: unknown) => `failed: ${(error as Error).message}`,
          ),
          new Promise((resolve) => setTimeout(resolve, 8000, 'waiting')),
        ])
        assert.equal(outcome, 'waiting', 'the migration gave up while the lock was held')
        await holder.query('commit')
        assert.deepEqual(await waiting, [])
      } finally {
        await holder.end().catch(() => {})
        await database.close()
        await testDatabase.drop()
      }
    })
  })

  describe('PostgreSQL outage, the service as a real process [postgres]', () => {
    test('cut: create and /readyz answer 503 (logged with the request id); restored: 201 from the same process', async () => {
      const proxy = await startTcpProxy(TEST_POSTGRES_URL, { defaultPort: 5432 })
      const database = await createTestDatabase('postgres')
      const server = await startServer({ DATABASE_URL: proxy.via(database.url) })
      try {
        const issued = await runCli(['provider', 'create', '--name', 'outage'], { DATABASE_URL: database.url })
        assert.equal(issued.code, 0, issued.stderr)
        const { token } = JSON.parse(issued.stdout) as { token: string }
        const create = (requestId: string) => postListing(server.baseUrl, token, listingBody(), { 'x-request-id': requestId })
        const ready = async () => readResponse(await fetch(`${server.baseUrl}/readyz`))

        assert.equal((await create('before-outage')).status, 201)
        proxy.refuse()
        assertUnavailable(await answeredInTime(() => create('during-outage')))
        assertProblem(await answeredInTime(ready), 503, 'unavailable')
        const logged = await server.waitForLog((line) => line.requestId === 'during-outage' && line.msg === 'database unavailable')
        assert.equal(logged.level, 40, 'logged as a warning')

        proxy.forward()
        assert.equal((await ready()).status, 200)
        const after = await create('after-outage')
        assert.equal(after.status, 201, after.text)
        assert.equal(server.child.exitCode, null, 'the same process answers')
      } finally {
        proxy.forward()
        await server.stop()
        await database.drop()
        await proxy.close()
      }
    })
  })
}

if (dialects.includes('postgres')) {
  describe('PostgreSQL refusing for real: connections terminated by an administrator, too many connections [postgres]', () => {
    test('57P01 on pooled connections and inside a statement, then 53300 on new ones: 503 or success, never 500; then it recovers', async () => {
      // Limits on a role bind only roles that are not superusers: the service connects as one of its own,
      // owner of its database so that it can migrate it.
      const role = `listing_limited_${randomBytes(4).toString('hex')}`
      const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL })
      await admin.connect()
      const database = await createTestDatabase('postgres')
      const server = await (async () => {
        await admin.query(`create role ${role} login`)
        await admin.query(`alter database ${new URL(database.url).pathname.slice(1)} owner to ${role}`)
        const url = new URL(database.url)
        url.username = role
        const issued = await runCli(['provider', 'create', '--name', 'limited'], { DATABASE_URL: url.toString() })
        assert.equal(issued.code, 0, issued.stderr)
        const started = await startServer({ DATABASE_URL: url.toString() })
        return { ...started, token: (JSON.parse(issued.stdout) as { token: string }).token }
      })()
      const terminateAll = () => admin.query('select pg_terminate_backend(pid) from pg_stat_activity where usename = $1', [role])
      // Distinct pages, so that no two requests share a query (identical reads in flight do).
      const list = async (page: number) =>
        readResponse(await fetch(`${server.baseUrl}/api/v1/listing?page=${page}`, { headers: { authorization: `Bearer ${server.token}` } }))
      const parallel = () => Promise.all(Array.from({ length: 10 }, (_, i) => answeredInTime(() => list(i + 1))))
      try {
        assert.deepEqual(
          (await parallel()).map((r) => r.status),
          Array(10).fill(200),
          'the pool holds several connections',
        )

        // Every pooled connection ends with 57P01 (admin_shutdown): idle ones are dropped from the pool.
        await terminateAll()
        let answer: Response | undefined
        for (let attempt = 0; attempt < 3 && answer?.status !== 200; attempt += 1) {
          answer = await answeredInTime(() => list(1))
          if (answer.status !== 200) assertUnavailable(answer)
        }
        assert.equal(answer?.status, 200, answer?.text)

        // A create inside its statement, waiting on a row lock held here, when its connection is terminated.
        const holder = new pg.Client({ connectionString: database.url })
        await holder.connect()
        try {
          await holder.query('begin')
          await holder.query('select 1 from providers for update')
          const pending = answeredInTime(() => postListing(server.baseUrl, server.token, listingBody()))
          let waiting: number | undefined
          for (let tries = 0; waiting === undefined && tries < 200; tries += 1) {
            const { rows } = await admin.query("select pid from pg_stat_activity where usename = $1 and wait_event_type = 'Lock'", [role])
            waiting = rows[0]?.pid
            if (waiting === undefined) await new Promise((resolve) => setTimeout(resolve, 50))
          }
          assert.ok(waiting !== undefined, 'the create never waited on the lock')
          await admin.query('select pg_terminate_backend($1)', [waiting])
          assertUnavailable(await pending)
        } finally {
          await holder.query('rollback')
          await holder.end()
        }
        assert.equal((await storedCounts(database.url)).listings, 0, 'the terminated create stored nothing')

        // One connection allowed: the pool's other connects fail with 53300 (too_many_connections).
        await admin.query(`alter role ${role} connection limit 1`)
        await terminateAll()
        const limited = await parallel()
        for (const response of limited) if (response.status !== 200) assertUnavailable(response)
        assert.ok(
          limited.some((r) => r.status === 503),
          `no request met the limit: ${limited.map((r) => r.status).join(', ')}`,
        )
        assert.ok(server.logLines().some((line) => line.msg === 'database unavailable' && /too many connections/.test(JSON.stringify(line))))

        await admin.query(`alter role ${role} connection limit -1`)
        assert.deepEqual(
          (await parallel()).map((r) => r.status),
          Array(10).fill(200),
          'recovered without a restart',
        )
        assert.equal(server.child.exitCode, null, 'the same process answers')
      } finally {
        await server.stop()
        await database.drop()
        await admin.query(`drop role if exists ${role}`)
        await admin.end()
      }
    })
  })
}

// ---- SQLite: locked, read-only, full -------------------------------------------------------------------------

if (dialects.includes('sqlite')) {
  describe('SQLite unavailable [sqlite]', () => {
    const service = {} as TestService
    let provider: TestProvider
    before(async () => {
      Object.assign(service, await startService('sqlite'))
      provider = await service.newProvider()
      assert.equal((await service.create(provider.token, listingBody({}, 2))).status, 201)
    })
    after(async () => {
      await service.close?.()
    })

    const file = () => service.databaseUrl.slice('sqlite:'.length)

    async function snapshot() {
      const listed = await service.list(provider.token)
      assert.equal(listed.status, 200, listed.text)
      return { listings: await countListings(service), items: await countItems(service), recordCount: listed.body.recordCount }
    }

    test('another connection holds the write lock past busy_timeout: create 503, nothing stored, reads answer meanwhile', async () => {
      const before = await snapshot()
      const other = new SQLite(file())
      try {
        other.exec('begin immediate')
        const create = answeredInTime(() => service.create(provider.token, listingBody({}, 5)))
        // The create waits for the lock on the writer thread (writes/sqlite-thread.ts), not on the event loop: a read
        // sent meanwhile answers at once, and WAL readers do not wait for a writer.
        const startedAt = Date.now()
        const listed = await service.list(provider.token)
        assert.equal(listed.status, 200, listed.text)
        assert.equal(listed.body.recordCount, before.recordCount)
        assert.ok(Date.now() - startedAt < 1000, `a read took ${Date.now() - startedAt} ms while a create waited for the lock`)
        assertUnavailable(await create)
      } finally {
        other.exec('rollback')
        other.close()
      }
      assert.deepEqual(await snapshot(), before)
      assert.equal((await service.create(provider.token, listingBody())).status, 201)
    })

    // Read-only media and a full disk inside SQLite (query_only, max_page_count) are per-connection settings,
    // and creates are written on the writer thread's own connection: test/listing-creates.test.ts sets them there.
    // A full disk for real, through the whole service, is the next test.
  })

  describe('SQLite disk full for real: the service as a process under RLIMIT_FSIZE [sqlite]', () => {
    // A real write failure (EFBIG from the kernel; Node ignores SIGXFSZ), not a pragma: the soft file-size limit
    // of the running server is lowered with prlimit(1), then lifted again (only the soft one: raising a hard
    // limit needs CAP_SYS_RESOURCE, which this container lacks). Skipped where prlimit is missing.
    const prlimit = spawnSync('prlimit', ['--version']).status === 0
    test(
      'writes past the limit answer 503 and store nothing; the limit lifted, the same process creates again',
      { skip: !prlimit && 'prlimit(1) is not installed' },
      async () => {
        const dir = mkdtempSync(join(tmpdir(), 'listing-outage-'))
        const file = join(dir, 'listings.db')
        const server = await startServer({ DATABASE_URL: `sqlite:${file}` })
        try {
          const [token] = server.printedTokens()
          assert.ok(token, server.stdout())
          const send = async (path: string, body?: unknown) => {
            return readResponse(
              await fetch(`${server.baseUrl}${path}`, {
                method: body === undefined ? 'GET' : 'POST',
                headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
                body: body === undefined ? undefined : JSON.stringify(body),
              }),
            )
          }
          const long = 'x'.repeat(200)
          const big = () => {
            const body = listingBody({}, 100)
            body.items = body.items.map((_: unknown, i: number) => item(i, { displayName: { ar: long, en: long } }))
            return body
          }
          assert.equal((await send('/api/v1/listing/create', big())).status, 201)

          // Room for a little more than the files hold now: a few large creates fit, then a write fails.
          const limit = Math.max(statSync(file).size, statSync(`${file}-wal`).size) + 256 * 1024
          const limited = spawnSync('prlimit', ['--pid', String(server.child.pid), `--fsize=${limit}:unlimited`])
          assert.equal(limited.status, 0, String(limited.stderr))
          let stored = 1
          let failed: Response | undefined
          for (let attempt = 0; attempt < 40 && !failed; attempt += 1) {
            const answer = await send('/api/v1/listing/create', big())
            if (answer.status === 201) stored += 1
            else failed = answer
          }
          assert.ok(failed, 'no create failed under the file-size limit')
          assertUnavailable(failed)
          const logged = await server.waitForLog((line) => line.msg === 'database unavailable')
          // The kernel's EFBIG, as SQLite reports a failed write.
          assert.match(String(logged.err?.code), /^SQLITE_(FULL|IOERR)/, JSON.stringify(logged))
          const listed = await send('/api/v1/listing')
          assert.equal(listed.status, 200, listed.text)
          assert.equal(listed.body.recordCount, stored)

          const lifted = spawnSync('prlimit', ['--pid', String(server.child.pid), '--fsize=unlimited:unlimited'])
          assert.equal(lifted.status, 0, String(lifted.stderr))
          const again = await send('/api/v1/listing/create', big())
          assert.equal(again.status, 201, again.text)
          assert.equal(server.child.exitCode, null, 'the same process answers')
          const stopped = await server.stop()
          assert.equal(stopped.code, 0, server.stderr())

          const check = new SQLite(file, { readonly: true })
          try {
            assert.deepEqual(check.pragma('integrity_check'), [{ integrity_check: 'ok' }])
            assert.equal((check.prepare('select count(*) as n from listings').get() as { n: number }).n, stored + 1)
            assert.equal((check.prepare('select sum(json_array_length(items_record)) as n from listings').get() as { n: number }).n, (stored + 1) * 100)
          } finally {
            check.close()
          }
        } finally {
          await server.stop()
          rmSync(dir, { recursive: true, force: true })
        }
      },
    )
  })

  describe('SQLite corruption is not an outage [sqlite]', () => {
    test('a damaged table answers 500 (not 503: waiting cannot repair it) and is logged at the fatal level', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'listing-outage-'))
      const file = join(dir, 'listings.db')
      let server = await startServer({ DATABASE_URL: `sqlite:${file}` })
      try {
        const [token] = server.printedTokens()
        const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
        const created = await fetch(`${server.baseUrl}/api/v1/listing/create`, { method: 'POST', headers, body: JSON.stringify(listingBody()) })
        assert.equal(created.status, 201)
        assert.equal((await server.stop()).code, 0)

        // The listings table's root page (its only page, for one listing) gets a page type no b-tree has.
        const db = new SQLite(file)
        const { rootpage } = db.prepare(`select rootpage from sqlite_master where name = 'listings'`).get() as { rootpage: number }
        const pageSize = db.pragma('page_size', { simple: true }) as number
        db.close()
        const fd = openSync(file, 'r+')
        writeSync(fd, Buffer.from([0xff]), 0, 1, (rootpage - 1) * pageSize)
        closeSync(fd)

        server = await startServer({ DATABASE_URL: `sqlite:${file}` })
        const listed = await readResponse(await fetch(`${server.baseUrl}/api/v1/listing`, { headers: { ...headers, 'x-request-id': 'corrupt-page' } }))
        assertProblem(listed, 500, 'internal')
        const logged = await server.waitForLog((line) => line.requestId === 'corrupt-page' && line.msg === 'database corruption detected')
        assert.equal(logged.level, 60, 'logged as fatal')
      } finally {
        await server.stop()
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })
}
