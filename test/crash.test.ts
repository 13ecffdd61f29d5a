import assert from 'node:assert/strict'
import { Agent } from 'node:http'
import { after, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { sql } from 'kysely'
import { openDatabase, type DialectName } from '../src/db/connection.js'
import { openSqliteConnection } from '../src/db/sqlite-connection.js'
import { fixtureImages, item, listingBody } from './fixtures.js'
import { createTestDatabase, testDialects, type TestDatabase } from './helper.js'
import { postCreate, type CreateAnswer } from './http-support.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'

/**
 * Contract §9: a 2xx create is durable and a listing is written all or nothing. The service runs as a real
 * process under 8 concurrent writers and is killed with SIGKILL at a random moment, five times on one database;
 * after each restart every acknowledged listing must be there with all its items, nothing partial may exist,
 * the database must be sound, and every request that was in flight at the kill must be safe to retry.
 */

after(killAll)

const dialects = await testDialects()

const CYCLES = 5
const WRITERS = 8
const PROVIDERS = 2

interface Provider {
  id: string
  token: string
}

/** A create the test sent: what it asked for, and the answer when it got one. */
interface Sent {
  provider: Provider
  body: Record<string, any>
  /** Set once a 2xx answer has been read whole. */
  listingId?: string
}

/** 1–30 items with varied prices (up to 3 decimals); some items name an image, as clients do. */
function randomBody(): Record<string, any> {
  const count = 1 + Math.floor(Math.random() * 30)
  const items = Array.from({ length: count }, (_, i) =>
    item(i, {
      price: Math.round((1 + Math.random() * 5000) * 1000) / 1000,
      quantity: 1 + (i % 7),
      ...(i % 4 === 0 ? { imageUrl: fixtureImages.url(`/img/item-${i % 8}.png`) } : {}),
    }),
  )
  return listingBody({ items })
}

/** The items of `body` as GET /api/v1/listing returns them. */
function listedItems(body: Record<string, any>) {
  return body.items.map((i: any) => ({
    nameAr: i.displayName.ar,
    nameEn: i.displayName.en,
    price: i.price,
    quantity: i.quantity,
    category: i.category,
  }))
}

/**
 * WRITERS clients, each on its own keep-alive connection, create listings back to back until the process is
 * killed after `killAfterMs`. Returns the creates that were in flight (sent, no complete answer) at the kill.
 */
async function loadThenKill(server: ServerProcess, providers: Provider[], sent: Map<string, Sent>, killAfterMs: number) {
  let killed = false
  const inFlight = new Set<Sent>()
  const unexpected: string[] = []
  const writer = async (n: number) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const provider = providers[n % providers.length] as Provider
    try {
      while (!killed) {
        const create: Sent = { provider, body: randomBody() }
        sent.set(create.body.referenceId, create)
        inFlight.add(create)
        let answer: CreateAnswer
        try {
          answer = await postCreate(server.port, agent, provider.token, create.body)
        } catch (error) {
          if (!killed) unexpected.push(`writer ${n}: ${(error as Error).message} before the kill`)
          return
        }
        inFlight.delete(create)
        if (answer.status !== 201) unexpected.push(`writer ${n}: ${answer.status} ${JSON.stringify(answer.body)}`)
        else create.listingId = answer.body.listingId
      }
    } finally {
      agent.destroy()
    }
  }
  const writers = Array.from({ length: WRITERS }, (_, n) => writer(n))
  await new Promise((resolve) => setTimeout(resolve, killAfterMs))
  killed = true
  server.child.kill('SIGKILL')
  assert.deepEqual(await server.closed, { code: null, signal: 'SIGKILL' })
  await Promise.all(writers)
  assert.deepEqual(unexpected, [])
  return [...inFlight]
}

/** Plain SQL on the test's database, beside the service. */
interface SqlReader {
  all(text: string): Promise<Array<Record<string, any>>>
  close(): Promise<void>
}

async function openSql(dialect: DialectName, url: string): Promise<SqlReader> {
  if (dialect === 'sqlite') {
    const sqlite = new SQLite(url.slice('sqlite:'.length))
    sqlite.pragma('busy_timeout = 5000')
    return {
      all: async (text) => sqlite.prepare(text).all() as Array<Record<string, any>>,
      close: async () => {
        sqlite.close()
      },
    }
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  return { all: async (text) => (await client.query(text)).rows, close: () => client.end() }
}

/**
 * Nothing partial and nothing inconsistent: items dense by position and equal to the body that was sent; per
 * provider, the counter equals the row count and seq runs 1..n. Returns listing ids by referenceId.
 */
async function checkConsistency(reader: SqlReader, sent: Map<string, Sent>): Promise<Map<string, string>> {
  const listings = await reader.all('select id, provider_id, seq, reference_id, items_record from listings order by provider_id, seq')
  const stored = new Map<string, string>()
  for (const listing of listings) {
    const own = JSON.parse(listing.items_record) as Array<Record<string, any>>
    const create = sent.get(listing.reference_id)
    assert.ok(create, `listing ${listing.id} has a referenceId the test never sent`)
    assert.equal(listing.provider_id, create.provider.id)
    assert.deepEqual(
      own.map((row) => Number(row.position)),
      own.map((_, i) => i),
      `listing ${listing.id}: item positions 0..n-1`,
    )
    const fromRows = own.map((row) => ({
      nameAr: row.name_ar,
      nameEn: row.name_en,
      price: Number(row.price_thousandths) / 1000,
      quantity: Number(row.quantity),
      category: row.category,
    }))
    assert.equal(own.length, create.body.items.length, `listing ${listing.id}: every item of its body, no fewer`)
    assert.deepEqual(fromRows, listedItems(create.body), `listing ${listing.id}: items equal the body sent`)
    stored.set(listing.reference_id, listing.id)
  }

  const providers = await reader.all('select id, listing_count from providers')
  for (const provider of providers) {
    const seqs = listings.filter((l) => l.provider_id === provider.id).map((l) => Number(l.seq))
    assert.equal(Number(provider.listing_count), seqs.length, `provider ${provider.id}: the counter equals its listings`)
    assert.deepEqual(
      seqs,
      seqs.map((_, i) => i + 1),
      `provider ${provider.id}: seq is 1..n`,
    )
  }
  return stored
}

/** The storage engine's own checks. Returns what was checked, for the test's diagnostics. */
async function checkIntegrity(dialect: DialectName, reader: SqlReader): Promise<string> {
  if (dialect === 'sqlite') {
    assert.deepEqual(await reader.all('pragma integrity_check'), [{ integrity_check: 'ok' }])
    assert.deepEqual(await reader.all('pragma foreign_key_check'), [])
    return 'PRAGMA integrity_check ok, foreign_key_check empty'
  }
  try {
    await reader.all('create extension if not exists amcheck')
  } catch (error) {
    return `amcheck unavailable (${(error as Error).message}): consistency checks only`
  }
  // heapallindexed: every heap tuple must also be found in the index, not only the index's own order.
  const checked = await reader.all(`
    select c.relname, bt_index_check(c.oid, true)
    from pg_index i
    join pg_class c on c.oid = i.indexrelid
    join pg_class t on t.oid = i.indrelid
    join pg_am am on am.oid = c.relam
    where t.relname in ('providers', 'tokens', 'listings', 'events') and am.amname = 'btree'`)
  assert.ok(checked.length >= 8, `every index of our tables checked: ${checked.map((r) => r.relname).join(', ')}`)
  return `amcheck bt_index_check(heapallindexed) on ${checked.length} indexes`
}

/** Every listing of `provider` through the API's pages, by id. */
async function readAllPages(server: ServerProcess, provider: Provider) {
  const byId = new Map<string, any>()
  let recordCount = -1
  for (let page = 1; ; page++) {
    const response = await fetch(`${server.baseUrl}/api/v1/listing?page=${page}&limit=50`, {
      headers: { authorization: `Bearer ${provider.token}` },
    })
    assert.equal(response.status, 200)
    const body = await response.json()
    recordCount = body.recordCount
    if (body.content.length === 0) break
    for (const listing of body.content) byId.set(listing.id, listing)
  }
  assert.equal(byId.size, recordCount, 'the pages hold recordCount listings, none twice')
  return byId
}

async function newProvider(url: string, name: string): Promise<Provider> {
  const made = await runCli(['provider', 'create', '--name', name], { DATABASE_URL: url })
  assert.equal(made.code, 0, made.stderr)
  const { id, token } = JSON.parse(made.stdout)
  return { id, token }
}

// One database, process and set of writers per dialect: the two run side by side.
describe('kill -9', { concurrency: true }, () => {
  for (const dialect of dialects) {
    describe(`kill -9 under load [${dialect}]`, () => {
      let database: TestDatabase
      after(() => database?.drop())

      test(`${CYCLES} kill -9 cycles: no acknowledged create lost, nothing partial, every in-flight create retries safely`, async (t) => {
        database = await createTestDatabase(dialect)
        const providers: Provider[] = []
        for (let n = 0; n < PROVIDERS; n++) providers.push(await newProvider(database.url, `crash ${n}`))
        const env = { DATABASE_URL: database.url, RATE_LIMIT_PER_MINUTE: '0' }
        const sent = new Map<string, Sent>()
        let inFlightTotal = 0
        let storedInFlight = 0
        let integrity = ''

        let server = await startServer(env)
        try {
          for (let cycle = 1; cycle <= CYCLES; cycle++) {
            const killAfterMs = 150 + Math.floor(Math.random() * 551)
            const inFlight = await loadThenKill(server, providers, sent, killAfterMs)
            server = await startServer(env)

            const reader = await openSql(dialect, database.url)
            try {
              integrity = await checkIntegrity(dialect, reader)
              const stored = await checkConsistency(reader, sent)

              // Every acknowledged create is there, with its id; nothing else is there but in-flight ones.
              const acknowledged = [...sent.values()].filter((create) => create.listingId !== undefined)
              for (const create of acknowledged) {
                assert.equal(stored.get(create.body.referenceId), create.listingId, `acknowledged ${create.listingId} survives`)
              }
              assert.equal(stored.size - acknowledged.length, inFlight.filter((c) => stored.has(c.body.referenceId)).length)

              // Read back through the API too: every acknowledged listing, its items in the order sent.
              for (const provider of providers) {
                const listed = await readAllPages(server, provider)
                for (const create of acknowledged.filter((c) => c.provider === provider)) {
                  const listing = listed.get(create.listingId as string)
                  assert.ok(listing, `acknowledged ${create.listingId} is listed`)
                  assert.equal(listing.referenceId, create.body.referenceId)
                  assert.deepEqual(listing.items, listedItems(create.body))
                }
              }

              // A create in flight at the kill is stored whole or not at all; retrying it is safe either way.
              inFlightTotal += inFlight.length
              for (const create of inFlight) {
                const before = stored.get(create.body.referenceId)
                const agent = new Agent()
                const answer = await postCreate(server.port, agent, create.provider.token, create.body).finally(() => agent.destroy())
                if (before) {
                  storedInFlight += 1
                  assert.equal(answer.status, 200, `a stored in-flight create replays: ${JSON.stringify(answer.body)}`)
                  assert.equal(answer.body.listingId, before)
                } else {
                  assert.equal(answer.status, 201, `an absent in-flight create is created: ${JSON.stringify(answer.body)}`)
                }
                create.listingId = answer.body.listingId
              }
              await checkConsistency(reader, sent)
            } finally {
              await reader.close()
            }
            t.diagnostic(`cycle ${cycle}: killed after ${killAfterMs} ms, ${inFlight.length} in flight`)
          }
        } finally {
          await server.stop('SIGKILL')
        }
        const acknowledged = [...sent.values()].filter((create) => create.listingId !== undefined).length
        t.diagnostic(
          `${CYCLES} cycles, ${acknowledged} acknowledged creates (${inFlightTotal} in flight at a kill, ` +
            `${storedInFlight} of them stored before the kill), 0 lost; ${integrity}`,
        )
      })
    })
  }
})

describe('SQLite durability settings', { skip: !dialects.includes('sqlite') && 'DIALECTS excludes sqlite' }, () => {
  // kill -9 cannot tell synchronous=OFF from FULL (the kernel still holds the written pages; the crash test
  // above passes with OFF), and a power cut cannot be staged here, so the setting itself is pinned.
  test('the connections the service opens run in WAL mode with synchronous=FULL', async () => {
    const database = await createTestDatabase('sqlite')
    const opened = openDatabase(database.url)
    // The writer thread, which stores every create, opens its own connection with this function.
    const writer = openSqliteConnection(database.url.slice('sqlite:'.length))
    try {
      const { rows: mode } = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(opened.kysely)
      const { rows: sync } = await sql<{ synchronous: number }>`pragma synchronous`.execute(opened.kysely)
      assert.deepEqual(mode, [{ journal_mode: 'wal' }])
      assert.deepEqual(sync, [{ synchronous: 2 }], 'FULL is 2')
      assert.equal(writer.pragma('journal_mode', { simple: true }), 'wal')
      assert.equal(writer.pragma('synchronous', { simple: true }), 2, "the writer's connection: FULL is 2")
    } finally {
      writer.close()
      await opened.close()
      await database.drop()
    }
  })
})
