import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { item, listingBody } from './fixtures.js'
import { createTestDatabase, parseJsonOrUndefined, testDialects, type TestDatabase } from './helper.js'
import { PGBOUNCER, pgbouncerInstalled, PREPARING_PGBOUNCER, startPgBouncer, type PgBouncer } from './pgbouncer-support.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'

/**
 * Issue 27: the service behind PgBouncer in transaction mode, with nothing but the URL. PgBouncer 1.18 refuses a
 * startup packet carrying statement_timeout, hands each transaction (and each statement outside one) to any
 * server connection, and keeps whatever a SET left there for the next client: so the service must send no
 * startup settings, prepare nothing by name, and set nothing per session, and its statement bound must still
 * hold. Two real instances, through a PgBouncer of this file's own with a pool smaller than their clients, so
 * that server connections are shared between them. Reservations too: a hold locks its listing's row for the
 * length of its transaction, which must be one transaction on one server connection.
 *
 * The same again through a PgBouncer that keeps prepared statements (1.21 or later), with
 * DATABASE_POOLER_PREPARES=true: every statement then prepared by name, on whichever server connection runs it.
 */

after(killAll)

const dialects = await testDialects()

/** A skip reason, warned about loudly: a PgBouncer missing here is one CI installs (.ci/run). */
function skipWithout(bin: string, install: string): string | false {
  const skip = !pgbouncerInstalled(bin)
    ? `PgBouncer is not installed at ${bin} (${install}; .ci/run installs it)`
    : !dialects.includes('postgres') && 'PostgreSQL does not answer'
  if (!pgbouncerInstalled(bin)) console.warn(`\n!!!!! ${String(skip)}: its part of test/pgbouncer.test.ts is SKIPPED !!!!!\n`)
  return skip
}

/** Server connections PgBouncer keeps per database and user: fewer than the two instances' 10 clients each. */
const POOL_SIZE = 4

interface Answer {
  status: number
  body: any
  headers: Headers
}

async function call(server: ServerProcess, method: string, path: string, token: string, json?: unknown): Promise<Answer> {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  })
  return { status: response.status, body: parseJsonOrUndefined(await response.text()), headers: response.headers }
}

/** Runs `work` on each of `count` clients at once, each inside a transaction held open until all have run it. */
async function onEveryServerConnection<T>(url: string, count: number, work: (client: pg.Client) => Promise<T>): Promise<T[]> {
  const clients = Array.from({ length: count }, () => new pg.Client({ connectionString: url }))
  try {
    await Promise.all(clients.map((client) => client.connect()))
    // Each client holds a server connection of its own while in its transaction: `count` of them, all distinct.
    await Promise.all(clients.map((client) => client.query('begin')))
    const results = await Promise.all(clients.map(work))
    await Promise.all(clients.map((client) => client.query('commit')))
    return results
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => {})))
  }
}

interface Pooler {
  title: string
  bin: string
  skip: string | false
  /** It keeps prepared statements: the instances name theirs (DATABASE_POOLER_PREPARES=true). */
  prepares: boolean
}

const POOLERS: Pooler[] = [
  { title: `PgBouncer (${PGBOUNCER})`, bin: PGBOUNCER, skip: skipWithout(PGBOUNCER, 'apt-get install pgbouncer'), prepares: false },
  {
    title: `a PgBouncer that keeps prepared statements (${PREPARING_PGBOUNCER}), DATABASE_POOLER_PREPARES=true`,
    bin: PREPARING_PGBOUNCER,
    skip: skipWithout(PREPARING_PGBOUNCER, 'scripts/build-pgbouncer.sh'),
    prepares: true,
  },
]

for (const pooler of POOLERS)
  describe(`two instances through ${pooler.title} in transaction mode`, { skip: pooler.skip }, () => {
    let bouncer: PgBouncer
    let database: TestDatabase
    let url: string
    let servers: ServerProcess[] = []
    let token: string

    before(async () => {
      bouncer = await startPgBouncer({ poolMode: 'transaction', poolSize: POOL_SIZE, bin: pooler.bin })
      assert.equal(bouncer.keepsPrepared, pooler.prepares, `${pooler.bin} --version`)
      database = await createTestDatabase('postgres')
      url = bouncer.via(database.url)
      const env = { DATABASE_URL: url, DATABASE_POOLER_PREPARES: String(pooler.prepares) }
      // Both migrate at once through the pooler: the migration lock is a transaction-scoped advisory lock.
      servers = await Promise.all([startServer(env), startServer(env)])
      const created = await runCli(['provider', 'create', '--name', 'Pooled Bakery'], { DATABASE_URL: url })
      assert.equal(created.code, 0, created.stderr)
      ;({ token } = JSON.parse(created.stdout))
    })
    after(async () => {
      await Promise.all(servers.map((server) => server.stop('SIGKILL')))
      await database?.drop()
      await bouncer?.stop()
    })

    test('creates, pages and patches at once from both instances: no 5xx, every answer the expected one', async () => {
      const instance = (i: number) => servers[i % 2] as ServerProcess
      const created = await Promise.all(
        Array.from({ length: 40 }, (_, i) => call(instance(i), 'POST', '/api/v1/listing/create', token, listingBody({}, 1 + (i % 3)))),
      )
      assert.deepEqual(
        created.map((answer) => answer.status),
        Array(40).fill(201),
        JSON.stringify(created.find((answer) => answer.status !== 201)?.body),
      )
      const ids = created.map((answer) => answer.body.listingId as string)
      const mixed = await Promise.all(
        Array.from({ length: 120 }, (_, i) => {
          const id = ids[i % ids.length] as string
          switch (i % 4) {
            case 0:
              return call(instance(i), 'POST', '/api/v1/listing/create', token, listingBody())
            case 1:
              return call(instance(i), 'PATCH', `/api/v1/listing/${id}`, token, { items: [{ position: 0, quantity: 50 + i }] })
            case 2:
              return call(instance(i), 'GET', `/api/v1/listing?page=${1 + (i % 3)}&limit=10`, token)
            default:
              return call(instance(i), 'GET', `/api/v1/listing/${id}`, token)
          }
        }),
      )
      const statuses = mixed.map((answer) => answer.status)
      assert.deepEqual(
        statuses.filter((status) => status >= 500),
        [],
        JSON.stringify(mixed.find((answer) => answer.status >= 500)?.body),
      )
      assert.deepEqual(
        statuses.filter((status, i) => status !== (i % 4 === 0 ? 201 : 200)),
        [],
        statuses.join(','),
      )
      // The feed saw every create and every change, in order, whichever instance and server connection ran it.
      const events: any[] = []
      for (let cursor: string | undefined; ;) {
        const page = await call(servers[0] as ServerProcess, 'GET', `/api/v1/events?limit=100${cursor ? `&after=${cursor}` : ''}`, token)
        assert.equal(page.status, 200)
        if (page.body.data.length === 0) break
        events.push(...page.body.data)
        cursor = page.body.nextCursor
      }
      assert.equal(events.length, 40 + 30 + 30)
      for (const server of servers) {
        const ready = await call(server, 'GET', '/readyz', token)
        assert.deepEqual([ready.status, ready.body], [200, { status: 'ready', database: 'primary' }])
      }
    })

    test('reservations at once from both instances: as many holds as units, confirmed or released elsewhere, read back; the marketplace’s feed has each change', async () => {
      const instance = (i: number) => servers[i % 2] as ServerProcess
      const made = await runCli(['marketplace', 'create', '--name', 'Pooled Deals'], { DATABASE_URL: url })
      assert.equal(made.code, 0, made.stderr)
      const marketplace = (JSON.parse(made.stdout) as { token: string }).token
      const created = await call(instance(0), 'POST', '/api/v1/listing/create', token, listingBody({ items: [item(0, { quantity: 10 })] }))
      assert.equal(created.status, 201)
      const listingId = created.body.listingId as string
      // One unit each, sixteen at once on a listing of ten: each takes the listing's lock in its own transaction.
      const holds = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          call(instance(i), 'POST', '/api/v1/reservations', marketplace, { listingId, referenceId: `pooled-${i}`, items: [{ position: 0, quantity: 1 }] }),
        ),
      )
      const refused = holds.filter((answer) => answer.status !== 201)
      assert.equal(holds.length - refused.length, 10, JSON.stringify(refused.find((answer) => answer.body?.type !== '/problems/insufficient-stock')?.body))
      assert.deepEqual(new Set(refused.map((answer) => `${answer.status} ${String(answer.body.type)}`)), new Set(['409 /problems/insufficient-stock']))
      // Each with the instance that made it.
      const heldBy = holds.flatMap((answer, i) => (answer.status === 201 ? [{ id: answer.body.id as string, i }] : []))
      const held = heldBy.map(({ id }) => id)
      // Each ended on the instance that did not make it: half confirmed, half released, at once.
      const ended = await Promise.all(
        heldBy.map(({ id, i }, k) => call(instance(i + 1), 'POST', `/api/v1/reservations/${id}/${k % 2 === 0 ? 'confirm' : 'release'}`, marketplace)),
      )
      assert.deepEqual(
        ended.map((answer) => `${answer.status} ${String(answer.body.status)}`),
        held.map((_, k) => (k % 2 === 0 ? '200 confirmed' : '200 released')),
      )
      for (const [k, id] of held.entries()) {
        const read = await call(instance(k), 'GET', `/api/v1/reservations/${id}`, marketplace)
        assert.deepEqual([read.status, read.body.status, read.body.version], [200, k % 2 === 0 ? 'confirmed' : 'released', 2])
      }
      for (const server of servers) {
        const stock = await call(server, 'GET', `/api/v1/listing/${listingId}/stock`, marketplace)
        assert.equal(stock.status, 200, JSON.stringify(stock.body))
        assert.deepEqual(stock.body.items, [{ position: 0, quantity: 5, held: 0, available: 5 }])
      }
      // The marketplace's feed: every change of its reservations, each reservation's in the order they happened.
      const types = new Map<string, string[]>()
      for (let cursor: string | undefined; ;) {
        const page = await call(instance(0), 'GET', `/api/v1/events?limit=7${cursor ? `&after=${cursor}` : ''}`, marketplace)
        assert.equal(page.status, 200, JSON.stringify(page.body))
        if (page.body.data.length === 0) break
        for (const event of page.body.data) types.set(event.data.id, [...(types.get(event.data.id) ?? []), event.type])
        cursor = page.body.nextCursor
      }
      assert.deepEqual(
        held.map((id) => types.get(id)),
        held.map((_, k) => ['reservation.held', k % 2 === 0 ? 'reservation.confirmed' : 'reservation.released']),
      )
      assert.equal(types.size, held.length)
    })

    test(
      pooler.prepares
        ? 'the server connections hold the instances’ statements, prepared by the pooler under its own names, and each has the role’s bound'
        : 'nothing stays behind on the server connections: no prepared statement, and each has the role’s bound',
      async () => {
        // After the loads above, every pooled server connection has served both instances. A statement prepared by
        // name would still be listed there; a SET would show as the session's own value.
        const seen = await onEveryServerConnection(url, POOL_SIZE, async (client) => {
          const prepared = await client.query<{ name: string }>('select name from pg_prepared_statements')
          const settings = await client.query<{ name: string; setting: string; source: string }>(
            `select name, setting, source from pg_settings where name in ('statement_timeout', 'jit') order by name`,
          )
          const pid = await client.query<{ pid: number }>('select pg_backend_pid() as pid')
          return {
            pid: pid.rows[0]?.pid,
            prepared: prepared.rows.map((row) => row.name),
            settings: settings.rows.map((row) => `${row.name}=${row.setting}`),
          }
        })
        assert.equal(new Set(seen.map((connection) => connection.pid)).size, POOL_SIZE, 'one server connection per client')
        for (const connection of seen) {
          // A keeping pooler prepares a client's named statement on the server connection under a name of its own.
          const strays = connection.prepared.filter((name) => !pooler.prepares || !name.startsWith('PGBOUNCER_'))
          assert.deepEqual(strays, [], `server connection ${connection.pid}`)
          assert.deepEqual(connection.settings, ['jit=off', 'statement_timeout=5000'], `server connection ${connection.pid}`)
        }
        const prepared = seen.reduce((sum, connection) => sum + connection.prepared.length, 0)
        if (pooler.prepares) assert.ok(prepared > 0, 'statements were prepared by name through the pooler')
      },
    )

    test('a PATCH of a row locked elsewhere fails within the statement bound (503), and leaves no backend waiting', async () => {
      const created = await call(servers[0] as ServerProcess, 'POST', '/api/v1/listing/create', token, listingBody())
      assert.equal(created.status, 201)
      const holder = new pg.Client({ connectionString: database.url }) // direct: a transaction of someone else's
      await holder.connect()
      try {
        await holder.query('begin')
        await holder.query('select 1 from listings where id = $1 for update', [created.body.listingId])
        const started = performance.now()
        const patched = await call(servers[1] as ServerProcess, 'PATCH', `/api/v1/listing/${created.body.listingId}`, token, {
          items: [{ position: 0, quantity: 7 }],
        })
        const seconds = (performance.now() - started) / 1000
        assert.equal(patched.status, 503, JSON.stringify(patched.body))
        assert.equal(patched.headers.get('retry-after'), '5')
        // statement_timeout is 5 s; the client's own bound (7 s) would mean the server's never fired.
        assert.ok(seconds >= 4.5 && seconds < 6.5, `answered after ${seconds.toFixed(2)} s`)
        const waiting = await holder.query<{ n: string }>(
          `select count(*)::text as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
        )
        assert.equal(waiting.rows[0]?.n, '0', 'the server cancelled the waiting statement itself')
      } finally {
        await holder.query('rollback').catch(() => {})
        await holder.end()
      }
      const after = await call(servers[1] as ServerProcess, 'PATCH', `/api/v1/listing/${created.body.listingId}`, token, {
        items: [{ position: 0, quantity: 7 }],
      })
      assert.equal(after.status, 200)
    })
  })
