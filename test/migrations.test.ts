import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { sql, type Kysely } from 'kysely'
import { openDatabase } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { cellOf } from '../src/discovery/cells.js'
import { unitVector } from '../src/discovery/sphere.js'
import { itemColumns, listingColumns } from '../src/listings/columns.js'
import type { CreateListingInput } from '../src/listings/schemas.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { listingBody } from './fixtures.js'
import { seededRandom } from './seeded-random.js'
import * as initial from '../src/migrations/2026-11-21-initial.js'
import * as listingItemsJson from '../src/migrations/2026-11-21-listing-items-json.js'
import { beforeMigration, createTestDatabase, testDialects } from './helper.js'
import { killAll, ROOT, runCli, startServer } from './process.js'

/** Contract §1: migrations are idempotent and safe when two instances start at once. */

after(killAll)

const ROUNDS = 3

/** One migration per file in src/migrations, named after it. */
const migrationNames = readdirSync(join(ROOT, 'src', 'migrations'))
  .filter((file) => file.endsWith('.ts'))
  .map((file) => file.slice(0, -'.ts'.length))
  .sort()

async function appliedMigrations(url: string): Promise<string[]> {
  const database = openDatabase(url)
  try {
    const result = await sql<{ name: string }>`select name from schema_migrations order by name`.execute(database.kysely)
    return result.rows.map((row) => row.name)
  } finally {
    await database.close()
  }
}

for (const dialect of await testDialects()) {
  describe(`migrations [${dialect}]`, () => {
    test('two `migrate` processes started at the same moment both succeed and apply each migration once', async () => {
      assert.ok(migrationNames.length > 0)
      // A race shows only when the two overlap; a few rounds, each on a fresh database, make that likely.
      for (let round = 1; round <= ROUNDS; round++) {
        const database = await createTestDatabase(dialect)
        try {
          const env = { DATABASE_URL: database.url, LOG_LEVEL: 'silent' }
          const results = await Promise.all([runCli(['migrate'], env), runCli(['migrate'], env)])
          for (const result of results) {
            assert.equal(result.code, 0, `round ${round}: exit ${result.code}; stderr: ${result.stderr}`)
            assert.deepEqual(JSON.parse(result.stdout), { migrated: true })
          }
          assert.deepEqual(await appliedMigrations(database.url), migrationNames, `round ${round}`)
        } finally {
          await database.drop()
        }
      }
    })

    test('closing a database that ran only its migrations leaves no connection open (a `migrate` run exits when done)', async () => {
      const testDatabase = await createTestDatabase(dialect)
      try {
        const sockets = () => process.getActiveResourcesInfo().filter((resource) => resource === 'TCPSocketWrap').length
        const before = sockets()
        const database = openDatabase(testDatabase.url)
        await migrate(database)
        await database.close()
        // An open one keeps the process alive: `migrate` on PostgreSQL used to linger for pg's idle timeout, 10 s.
        // pg's end resolves before the socket has closed, so its closing is waited for, well within those 10 s.
        const deadline = Date.now() + 5000
        while (sockets() > before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
        assert.equal(sockets(), before, 'a connection is still open 5 s after close')
        await database.close()
      } finally {
        await testDatabase.drop()
      }
    })
  })
}

for (const dialect of await testDialects()) {
  test(`2026-11-21-listing-items-json fills items_json of listings stored before it [${dialect}]`, async () => {
    const testDatabase = await createTestDatabase(dialect)
    const database = openDatabase(testDatabase.url)
    try {
      const db = database.kysely as Kysely<any>
      await initial.up(db)
      await db.insertInto('providers').values({ id: 'prv_1', name: 'Old', industry: 'bakery', created_at_ms: 1, listing_count: 2 }).execute()
      const listing = (id: string, seq: number) => ({
        id,
        provider_id: 'prv_1',
        seq,
        reference_id: id,
        request_hash: 'h',
        type: 'timed',
        discount_rate: 0.5,
        is_assigned_to_driver: 0,
        latitude: 0,
        longitude: 0,
        brand_name_ar: 'ع',
        brand_name_en: 'E',
        brand_url_safe_name: 'e',
        brand_image_url: 'https://example.com/b.png',
        created_at_ms: seq,
        expires_at_unix: 9,
      })
      await db
        .insertInto('listings')
        .values([listing('L1', 1), listing('L2', 2)])
        .execute()
      const row = (listing_id: string, position: number, name: string, price_thousandths: number) => ({
        listing_id,
        position,
        name_ar: `${name} ع`,
        name_en: name,
        url_safe_name: name,
        image_url: null,
        category: 'product',
        sub_category: 'drink',
        price_thousandths,
        quantity: position + 1,
      })
      // Inserted out of order: the JSON follows position, not insertion.
      await db
        .insertInto('listing_items')
        .values([row('L1', 1, 'second', 7125), row('L1', 0, 'first', 19990), row('L2', 0, 'only', 1000)])
        .execute()

      await listingItemsJson.up(db)

      const stored = await db.selectFrom('listings').select(['id', 'items_json']).orderBy('id').execute()
      assert.deepEqual(
        stored.map((r) => [r.id, JSON.parse(r.items_json)]),
        [
          [
            'L1',
            [
              { nameAr: 'first ع', nameEn: 'first', price: 19.99, quantity: 1, category: 'product' },
              { nameAr: 'second ع', nameEn: 'second', price: 7.125, quantity: 2, category: 'product' },
            ],
          ],
          ['L2', [{ nameAr: 'only ع', nameEn: 'only', price: 1, quantity: 1, category: 'product' }]],
        ],
      )
    } finally {
      await database.close()
      await testDatabase.drop()
    }
  })
}

describe('two instances starting at once on one fresh SQLite file', () => {
  test('both come up and exactly one prints a demo token', async () => {
    const database = await createTestDatabase('sqlite')
    try {
      const servers = await Promise.all([startServer({ DATABASE_URL: database.url }), startServer({ DATABASE_URL: database.url })])
      for (const server of servers) {
        const response = await fetch(`${server.baseUrl}/readyz`)
        assert.equal(response.status, 200)
      }
      const printed = servers.map((server) => server.printedTokens())
      assert.equal(printed.filter((tokens) => tokens.length > 0).length, 1, `tokens printed: ${JSON.stringify(printed)}`)
      assert.equal(printed.flat().length, 1)
      const token = printed.flat()[0] as string
      // The one token printed works on both instances.
      for (const server of servers) {
        const response = await fetch(`${server.baseUrl}/api/v1/listing`, { headers: { authorization: `Bearer ${token}` } })
        assert.equal(response.status, 200)
      }
      assert.deepEqual(await appliedMigrations(database.url), migrationNames)
      const check = openDatabase(database.url)
      try {
        const providers = await check.kysely.selectFrom('providers').select('name').execute()
        assert.deepEqual(providers, [{ name: 'demo' }], 'one demo provider')
      } finally {
        await check.close()
      }
    } finally {
      await killAll()
      await database.drop()
    }
  })
})

for (const dialect of await testDialects()) {
  test(`2026-11-25-items-stored-once leaves items_record as the one copy of a listing's items [${dialect}]`, async () => {
    await beforeMigration(dialect, '2026-11-25-items-stored-once', async ({ database, db, next }) => {
      const provider = await new ProviderRepository(database).create({ name: 'Before' }, Date.now())
      const input = { ...(listingBody({}, 2) as CreateListingInput), referenceId: 'before' }
      const items = JSON.stringify(itemColumns(input))
      await db
        .insertInto('listings')
        .values({
          ...listingColumns(provider.id, input),
          id: 'L1',
          seq: 1,
          created_at_ms: 1,
          updated_at_ms: 1,
          expires_at_unix: 9,
          request_hash: 'h',
          items_record: items,
          items_json: '[]',
          cell: 0,
        })
        .execute()

      await next.up(db, dialect)

      const stored = await db.selectFrom('listings').selectAll().executeTakeFirstOrThrow()
      assert.equal(stored.items_record, items)
      assert.ok(!('items_json' in stored))
      const tables =
        dialect === 'sqlite'
          ? await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(db)
          : await sql<{ name: string }>`select tablename as name from pg_tables where schemaname = current_schema()`.execute(db)
      assert.ok(!tables.rows.some((row) => row.name === 'listing_items'))
    })
  })
}

for (const dialect of await testDialects()) {
  test(`2026-11-24-discovery-cells fills every existing listing's cell and replaces the first spatial index [${dialect}]`, async () => {
    await beforeMigration(dialect, '2026-11-24-discovery-cells', async ({ database, db, next: cells }) => {
      const provider = await new ProviderRepository(database).create({ name: 'Before cells' }, Date.now())
      // More listings than the migration fills per statement, spread over the globe, poles and antimeridian too.
      const next = seededRandom(3)
      const count = 5_003
      const body = listingBody() as CreateListingInput
      const rows = Array.from({ length: count }, (_, k) => {
        const latitude = k === 0 ? 90 : k === 1 ? -90 : Math.asin(2 * next() - 1) * (180 / Math.PI)
        const longitude = k === 2 ? 180 : k === 3 ? -180 : 360 * next() - 180
        const input = { ...body, referenceId: `before-${k}`, location: { latitude, longitude } }
        return {
          ...listingColumns(provider.id, input),
          id: `L${String(k).padStart(5, '0')}`,
          seq: k + 1,
          created_at_ms: 1,
          updated_at_ms: 1,
          expires_at_unix: 9,
          request_hash: 'h',
          items_record: JSON.stringify(itemColumns(input)),
        }
      })
      for (let at = 0; at < count; at += 500)
        await db
          .insertInto('listings')
          .values(rows.slice(at, at + 500))
          .execute()

      await cells.up(db, dialect)

      const stored = await db.selectFrom('listings').select(['id', 'latitude', 'longitude', 'cell']).execute()
      assert.equal(stored.length, count)
      for (const row of stored) assert.equal(Number(row.cell), cellOf(unitVector(row.latitude, row.longitude)), row.id)
      const indexes =
        dialect === 'sqlite'
          ? await sql<{ name: string }>`select name from sqlite_master where tbl_name in ('listings', 'listing_geo') and name like 'listing%'`.execute(db)
          : await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'listings'`.execute(db)
      const names = indexes.rows.map((row) => row.name)
      assert.ok(names.includes('listings_near') && names.includes('listings_ending'), names.join(', '))
      assert.ok(!names.includes('listing_geo') && !names.includes('listings_discovery'), names.join(', '))
    })
  })
}

for (const dialect of await testDialects()) {
  test(`2026-11-25-shard-ready-keys keeps every row and index, and gives the delivery log its provider [${dialect}]`, async () => {
    await beforeMigration(dialect, '2026-11-25-shard-ready-keys', async ({ database, db, next }) => {
      const provider = await new ProviderRepository(database).create({ name: 'Before keys' }, Date.now())
      const input = { ...(listingBody({}, 1) as CreateListingInput), referenceId: 'before' }
      await db
        .insertInto('listings')
        .values({
          ...listingColumns(provider.id, input),
          id: 'L1',
          seq: 1,
          created_at_ms: 1,
          updated_at_ms: 1,
          expires_at_unix: 9,
          request_hash: 'h',
          items_record: JSON.stringify(itemColumns(input)),
          cell: 7,
        })
        .execute()
      await db
        .insertInto('events')
        .values({ id: 'E1', provider_id: provider.id, seq: 1, type: 'listing.created', listing_id: 'L1', created_at_ms: 1, snapshot: '{}' })
        .execute()
      const endpoint = { provider_id: provider.id, url: 'https://x.example', event_mask: 1, status: 'enabled', created_at_ms: 1, secret: 's' }
      await db
        .insertInto('webhook_endpoints')
        .values({ ...endpoint, id: 'W1' })
        .execute()
      const delivery = { event_id: 'E1', provider_id: provider.id, event_type: 'listing.created', attempts: 1, next_attempt_at_ms: 5, created_at_ms: 1 }
      await db
        .insertInto('webhook_deliveries')
        .values({ ...delivery, id: 'W1:E1', endpoint_id: 'W1' })
        .execute()
      const attempt = { event_id: 'E1', event_type: 'listing.created', attempt: 1, outcome: 'failed', duration_ms: 3, at_ms: 2 }
      // The second attempt's endpoint is gone: a log row with no provider, which the migration does not keep.
      await db
        .insertInto('webhook_attempts')
        .values([
          { ...attempt, endpoint_id: 'W1' },
          { ...attempt, endpoint_id: 'W0' },
        ])
        .execute()
      const before = await indexNames(db, dialect)

      await next.up(db, dialect)

      assert.deepEqual(await indexNames(db, dialect), before)
      const listing = await db.selectFrom('listings').selectAll().executeTakeFirstOrThrow()
      assert.deepEqual([listing.id, listing.provider_id, Number(listing.cell), Number(listing.version)], ['L1', provider.id, 7, 1])
      assert.equal(listing.items_record, JSON.stringify(itemColumns(input)))
      assert.deepEqual(await db.selectFrom('events').select(['id', 'provider_id']).execute(), [{ id: 'E1', provider_id: provider.id }])
      assert.deepEqual(await db.selectFrom('webhook_endpoints').select(['id', 'secret']).execute(), [{ id: 'W1', secret: 's' }])
      assert.deepEqual(await db.selectFrom('webhook_deliveries').select(['id', 'endpoint_id']).execute(), [{ id: 'W1:E1', endpoint_id: 'W1' }])
      assert.deepEqual(await db.selectFrom('webhook_attempts').select(['endpoint_id', 'provider_id']).execute(), [
        { endpoint_id: 'W1', provider_id: provider.id },
      ])
      // The keys hold what they held: the same reference again is refused.
      await assert.rejects(
        db
          .insertInto('listings')
          .values({ ...listing, id: 'L2', seq: 2 })
          .execute(),
      )
    })
  })
}

/** The names of every index and key of the schema (SQLite's automatic ones by what they are on, not their number). */
async function indexNames(db: Kysely<any>, dialect: 'sqlite' | 'postgres'): Promise<string[]> {
  const { rows } =
    dialect === 'sqlite'
      ? await sql<{ name: string }>`
          select case when i.name like 'sqlite_autoindex_%' then m.name || ' ' || i.origin || ' key' else i.name end as name
          from sqlite_master m, pragma_index_list(m.name) i where m.type = 'table' order by 1`.execute(db)
      : await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema() order by 1`.execute(db)
  return rows.map((row) => row.name)
}

for (const dialect of await testDialects()) {
  test(`2026-11-27-event-owners keeps every row, names each stream's owner, and keeps its keys led by it [${dialect}]`, async () => {
    await beforeMigration(dialect, '2026-11-27-event-owners', async ({ database, db, next }) => {
      const provider = await new ProviderRepository(database).create({ name: 'Before owners' }, Date.now())
      await db
        .insertInto('events')
        .values({ id: 'E1', provider_id: provider.id, seq: 1, type: 'listing.created', listing_id: 'L1', created_at_ms: 1, snapshot: '{}' })
        .execute()
      const endpoint = { provider_id: provider.id, url: 'https://x.example', status: 'enabled', created_at_ms: 1, secret: 's' }
      // Every type there was (15), and one of them (1).
      await db
        .insertInto('webhook_endpoints')
        .values([
          { ...endpoint, id: 'W1', event_mask: 15 },
          { ...endpoint, id: 'W2', event_mask: 1 },
        ])
        .execute()
      await db
        .insertInto('webhook_deliveries')
        .values({
          id: 'W1:E1',
          endpoint_id: 'W1',
          event_id: 'E1',
          provider_id: provider.id,
          event_type: 'listing.created',
          attempts: 1,
          next_attempt_at_ms: 5,
          created_at_ms: 1,
        })
        .execute()
      await db
        .insertInto('webhook_attempts')
        .values({
          provider_id: provider.id,
          endpoint_id: 'W1',
          event_id: 'E1',
          event_type: 'listing.created',
          attempt: 1,
          outcome: 'failed',
          duration_ms: 3,
          at_ms: 2,
        })
        .execute()
      await db.insertInto('marketplaces').values({ id: 'mkt_1', name: 'Deals', created_at_ms: 1 }).execute()
      const before = await streamIndexes(db, dialect)

      await next.up(db, dialect)

      // The same indexes, each on the same columns in the same places, provider_id now owner_id: still leading.
      const after = await streamIndexes(db, dialect)
      assert.deepEqual(
        after,
        before.map(([name, columns]) => [name, columns.replace(/provider_id/g, 'owner_id')]),
      )
      assert.ok(after.some(([name, columns]) => name.endsWith('webhook_deliveries_endpoint') && columns === 'owner_id, endpoint_id, next_attempt_at_ms'))
      for (const table of ['events', 'webhook_endpoints', 'webhook_deliveries', 'webhook_attempts']) {
        const rows = await db.selectFrom(table).select('owner_id').execute()
        assert.ok(rows.length > 0 && rows.every((row) => row.owner_id === provider.id), table)
      }
      assert.deepEqual(await db.selectFrom('webhook_endpoints').select(['id', 'event_mask']).orderBy('id').execute(), [
        { id: 'W1', event_mask: -1 },
        { id: 'W2', event_mask: 1 },
      ])
      assert.deepEqual(await db.selectFrom('marketplaces').select(['id', 'event_count']).execute(), [{ id: 'mkt_1', event_count: 0 }])
      assert.deepEqual(await db.selectFrom('events').select(['id', 'seq', 'snapshot']).execute(), [{ id: 'E1', seq: 1, snapshot: '{}' }])
    })
  })
}

/** Every index and key of the stream's tables with its columns in order, as `[name, "a, b"]`. */
async function streamIndexes(db: Kysely<any>, dialect: 'sqlite' | 'postgres'): Promise<Array<[string, string]>> {
  const tables = ['events', 'webhook_endpoints', 'webhook_deliveries', 'webhook_attempts']
  const { rows } =
    dialect === 'sqlite'
      ? await sql<{ name: string; columns: string }>`
          select m.name || ' ' || i.name as name, (select group_concat(name, ', ') from (select name from pragma_index_info(i.name) order by seqno)) as columns
          from sqlite_master m, pragma_index_list(m.name) i where m.type = 'table' and m.name in (${sql.join(tables)}) order by 1`.execute(db)
      : await sql<{ name: string; columns: string }>`
          select i.relname::text as name, array_to_string(array(select a.attname::text from unnest(x.indkey) with ordinality as k(attnum, n)
            join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum order by k.n), ', ') as columns
          from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
          where t.relnamespace = current_schema()::regnamespace and t.relname in (${sql.join(tables)}) order by 1`.execute(db)
  return rows.map((row) => [row.name, row.columns])
}
