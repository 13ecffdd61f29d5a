import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { inTransaction, openDatabase, type Database } from '../src/db/connection.js'
import { isDatabaseUnavailable, isUniqueViolation } from '../src/db/dialect.js'
import { migrate } from '../src/db/migrate.js'
import { prepareListing } from '../src/listings/columns.js'
import { ListingCreates, type ListingCreate } from '../src/listings/create-listing.js'
import type { CreateListingInput } from '../src/listings/schemas.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { item, listingBody } from './fixtures.js'
import { createTestDatabase, testDialects, type TestDatabase } from './helper.js'

/**
 * The create's write on its own (listings/create-listing.ts): creates of one provider that arrive together share
 * a transaction, and one that fails is stored again alone, so it never fails another; sequence numbers, the
 * counter and events stay dense and in agreement whatever fails.
 */
for (const dialect of await testDialects()) {
  describe(`listing creates [${dialect}]`, () => {
    let testDb: TestDatabase
    let database: Database
    let creates: ListingCreates
    let providerId: string
    before(async () => {
      testDb = await createTestDatabase(dialect)
      database = openDatabase(testDb.url)
      await migrate(database)
      providerId = (await new ProviderRepository(database).create({ name: 'Writer test' }, Date.now())).id
      creates = new ListingCreates(database.transact)
    })
    after(async () => {
      await database.close()
      await testDb.drop()
    })

    const createOf = (body: Record<string, unknown>, provider = providerId): ListingCreate => ({
      ...prepareListing(provider, body as CreateListingInput),
      nowMs: Date.now(),
      ttlSeconds: 3600,
    })
    const create = (overrides: Record<string, unknown> = {}, itemCount = 1) => createOf(listingBody(overrides, itemCount))
    /** What is stored, counted by the database. */
    const stored = async () => {
      const items = database.dialect === 'postgres' ? sql`json_array_length(items_record::json)` : sql`json_array_length(items_record)`
      const { rows } = await sql<Record<string, number | string>>`select
          (select count(*) from listings) as listings,
          (select coalesce(sum(${items}), 0) from listings) as items,
          (select listing_count from providers where id = ${providerId}) as counter,
          (select coalesce(max(seq), 0) from listings) as max_seq,
          (select count(*) from events) as events,
          (select event_count from providers where id = ${providerId}) as event_counter`.execute(database.kysely)
      const row = rows[0] as Record<string, number | string>
      const n = (name: string) => Number(row[name])
      return {
        listings: n('listings'),
        items: n('items'),
        counter: n('counter'),
        max_seq: n('max_seq'),
        events: n('events'),
        event_counter: n('event_counter'),
      }
    }

    test('200 concurrent creates are all stored: sequence numbers and events dense, counters exact', async () => {
      const before = await stored()
      const created = await Promise.all(Array.from({ length: 200 }, () => creates.store(create({}, 2))))
      assert.equal(new Set(created.map((listing) => listing.listingId)).size, 200)
      const after = await stored()
      assert.equal(after.listings, before.listings + 200)
      assert.equal(after.items, before.items + 400)
      assert.equal(after.max_seq, after.listings)
      assert.equal(after.counter, after.listings)
      assert.equal(after.events, after.listings)
      assert.equal(after.event_counter, after.events)
    })

    test('one create of those arriving together fails (its referenceId is taken): only it fails, and it takes no sequence number', async () => {
      const before = await stored()
      const outcomes = await Promise.allSettled([
        creates.store(create({ referenceId: 'batch-dup' }, 3)),
        creates.store(create({ referenceId: 'batch-dup' }, 2)),
        creates.store(create({}, 4)),
        creates.store(create({}, 1)),
      ])
      const failed = outcomes.filter((outcome) => outcome.status === 'rejected')
      assert.equal(failed.length, 1, JSON.stringify(outcomes))
      assert.ok(isUniqueViolation((failed[0] as PromiseRejectedResult).reason))
      const after = await stored()
      assert.equal(after.listings, before.listings + 3)
      assert.equal(after.counter, after.listings)
      assert.equal(after.max_seq, after.listings)
      assert.equal(after.event_counter, after.events)
    })

    test("a create for a provider that does not exist fails alone, with the database's words", async () => {
      const outcomes = await Promise.allSettled([
        creates.store(create()),
        creates.store(create({}, 1)),
        creates.store(createOf(listingBody(), 'no-such-provider')),
      ])
      assert.equal(outcomes[0].status, 'fulfilled')
      assert.equal(outcomes[1].status, 'fulfilled')
      assert.equal(outcomes[2].status, 'rejected')
      assert.match(String(outcomes[2].reason), /provider no-such-provider does not exist/)
    })

    if (dialect === 'sqlite') {
      // The failure switches (query_only, max_page_count) belong to a connection: these creates are written on the
      // main one, where the test can set them, by the same functions the writer thread's connection runs.
      const onMain = () => new ListingCreates(inTransaction(database.kysely))

      test('read-only database (query_only): creates fail as an outage, nothing is stored, then it writes again', async () => {
        const connection = database.sqlite?.connection
        assert.ok(connection)
        const before = await stored()
        const creates = onMain()
        connection.pragma('query_only = on')
        try {
          const outcomes = await Promise.allSettled([creates.store(create()), creates.store(create({}, 3))])
          for (const outcome of outcomes) {
            assert.equal(outcome.status, 'rejected')
            assert.match(String((outcome.reason as { code?: unknown }).code), /^SQLITE_READONLY/)
            assert.ok(isDatabaseUnavailable(outcome.reason))
          }
        } finally {
          connection.pragma('query_only = off')
        }
        assert.deepEqual(await stored(), before)
        await creates.store(create())
        assert.equal((await stored()).listings, before.listings + 1)
      })

      test('disk full (max_page_count): the create that does not fit fails as an outage; the file stays intact and consistent', async () => {
        const connection = database.sqlite?.connection
        assert.ok(connection)
        const creates = onMain()
        const before = await stored()
        const long = 'x'.repeat(200)
        const bigBody = listingBody({}, 100)
        bigBody.items = bigBody.items.map((_: unknown, i: number) => item(i, { displayName: { ar: long, en: long } }))
        const pages = connection.pragma('page_count', { simple: true }) as number
        const limit = connection.pragma('max_page_count', { simple: true }) as number
        connection.pragma(`max_page_count = ${pages}`)
        let outcomes: Array<PromiseSettledResult<unknown>>
        try {
          outcomes = await Promise.allSettled([creates.store(create()), creates.store(createOf(bigBody))])
        } finally {
          connection.pragma(`max_page_count = ${limit}`)
        }
        assert.equal(outcomes[1]?.status, 'rejected')
        const error = outcomes[1].reason as { code?: unknown }
        assert.equal(error.code, 'SQLITE_FULL')
        assert.ok(isDatabaseUnavailable(error))
        await creates.store(createOf(bigBody))
        // Whatever committed is whole: listings, items and the counter agree.
        const committed = outcomes[0]?.status === 'fulfilled' ? 1 : 0
        const after = await stored()
        assert.equal(after.listings, before.listings + committed + 1)
        assert.equal(after.counter, after.listings)
        assert.equal(after.items, before.items + committed + 100)
        assert.deepEqual(connection.pragma('integrity_check'), [{ integrity_check: 'ok' }])
      })
    }
  })
}
