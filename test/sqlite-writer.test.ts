import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import { openDatabase, type Database } from '../src/db/connection.js'
import { isDatabaseUnavailable } from '../src/db/dialect.js'
import { migrate } from '../src/db/migrate.js'
import { prepareListing } from '../src/listings/columns.js'
import { ListingRepository } from '../src/listings/repository.js'
import type { ListingWrite } from '../src/listings/listing-write.js'
import { sqliteBatchRunner, type JobOutcome } from '../src/writes/sqlite-batch.js'
import { openWrites } from '../src/writes/writes.js'
import type { CreateListingInput } from '../src/listings/schemas.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { item, listingBody } from './fixtures.js'
import { createTestDatabase, type TestDatabase } from './helper.js'

type WriteOutcome = JobOutcome

/**
 * The SQLite write path on its own (src/writes/sqlite-batch.ts, sqlite-thread.ts): batches of creates in one
 * transaction, a savepoint each, and how a batch fails. The per-connection failure switches (query_only,
 * max_page_count) are set on the connection that writes, which in the service is the writer thread's.
 */
describe('SQLite listing writer', () => {
  let testDb: TestDatabase
  let database: Database
  let providerId: string
  let file: string
  before(async () => {
    testDb = await createTestDatabase('sqlite')
    database = openDatabase(testDb.url)
    await migrate(database)
    providerId = (await new ProviderRepository(database).create({ name: 'Writer test' }, Date.now())).id
    file = testDb.url.slice('sqlite:'.length)
  })
  after(async () => {
    await database.close()
    await testDb.drop()
  })

  const writeOf = (body: Record<string, unknown>, provider = providerId): ListingWrite => ({
    ...prepareListing(provider, body as CreateListingInput),
    nowMs: Date.now(),
    ttlSeconds: 3600,
  })
  const write = (overrides: Record<string, unknown> = {}, itemCount = 1) => writeOf(listingBody(overrides, itemCount))
  /** What is stored, read on a connection of its own. */
  const stored = () => {
    const check = new SQLite(file, { readonly: true })
    try {
      const one = (text: string) => (check.prepare(text).get() as { n: number }).n
      return {
        listings: one('select count(*) as n from listings'),
        items: one('select count(*) as n from listing_items'),
        counter: one('select listing_count as n from providers'),
        maxSeq: one('select coalesce(max(seq), 0) as n from listings'),
        events: one('select count(*) as n from events'),
      }
    } finally {
      check.close()
    }
  }
  /** A writer on a connection of its own, as the writer thread has; `run` may set that connection's pragmas. */
  const withWriter = (run: (writeBatch: (batch: ListingWrite[]) => WriteOutcome[], connection: SQLite.Database) => void) => {
    const connection = new SQLite(file)
    connection.pragma('foreign_keys = ON')
    try {
      const runBatch = sqliteBatchRunner(connection)
      run((batch) => runBatch(batch.map((args) => ({ name: 'createListing', args }))), connection)
    } finally {
      connection.close()
    }
  }
  const failure = (outcome: WriteOutcome | undefined) => {
    assert.ok(outcome && !outcome.ok, `expected a failure, got ${JSON.stringify(outcome)}`)
    return Object.assign(new Error(outcome.error.message), { code: outcome.error.code })
  }

  test('one create of a batch fails (its referenceId was taken earlier in the batch): only it is undone', () => {
    const before = stored()
    const first = write({ referenceId: 'batch-dup' }, 3)
    withWriter((writeBatch) => {
      const [a, b, c] = writeBatch([first, write({ referenceId: 'batch-dup' }, 2), write({}, 4)])
      assert.ok(a?.ok && c?.ok, JSON.stringify([a, c]))
      assert.equal(failure(b).code, 'SQLITE_CONSTRAINT_UNIQUE')
    })
    const after = stored()
    assert.equal(after.listings, before.listings + 2)
    assert.equal(after.items, before.items + 7)
    // The failed create took no sequence number: seq stays dense, and recordCount exact.
    assert.equal(after.counter, after.listings)
    assert.equal(after.maxSeq, after.listings)
  })

  test('read-only database (query_only): the batch answers SQLITE_READONLY, an outage; nothing stored; then it writes again', () => {
    const before = stored()
    withWriter((writeBatch, connection) => {
      connection.pragma('query_only = on')
      const outcomes = writeBatch([write(), write({}, 3)])
      for (const outcome of outcomes) {
        const error = failure(outcome)
        assert.match(String(error.code), /^SQLITE_READONLY/)
        assert.ok(isDatabaseUnavailable(error))
      }
      assert.deepEqual(stored(), before)
      connection.pragma('query_only = off')
      assert.ok(writeBatch([write()])[0]?.ok)
    })
    assert.equal(stored().listings, before.listings + 1)
  })

  test('disk full (max_page_count): the create that does not fit answers SQLITE_FULL, an outage; the file stays intact and consistent', () => {
    const before = stored()
    const long = 'x'.repeat(200)
    const bigBody = listingBody({}, 100)
    bigBody.items = bigBody.items.map((_: unknown, i: number) => item(i, { displayName: { ar: long, en: long } }))
    const big = writeOf(bigBody)
    withWriter((writeBatch, connection) => {
      const pages = connection.pragma('page_count', { simple: true }) as number
      const limit = connection.pragma('max_page_count', { simple: true }) as number
      connection.pragma(`max_page_count = ${pages}`)
      const outcomes = writeBatch([write(), big])
      const error = failure(outcomes[1])
      assert.equal(error.code, 'SQLITE_FULL')
      assert.ok(isDatabaseUnavailable(error))
      connection.pragma(`max_page_count = ${limit}`)
      assert.ok(writeBatch([big])[0]?.ok)
      // Whatever of the batch committed is whole: listings, items and the counter agree.
      const committed = outcomes.filter((outcome) => outcome.ok).length
      const after = stored()
      assert.equal(after.listings, before.listings + committed + 1)
      assert.equal(after.counter, after.listings)
      assert.equal(after.items, before.items + (committed === 1 ? 1 : 0) + 100)
      assert.deepEqual(connection.pragma('integrity_check'), [{ integrity_check: 'ok' }])
    })
  })

  test('through the writer thread: 200 concurrent creates are all stored, sequence numbers dense, then the thread ends', async () => {
    const before = stored()
    const writes = openWrites(database)
    const repository = new ListingRepository(database, writes)
    const created = await Promise.all(
      Array.from({ length: 200 }, () => repository.insert(writeOf(listingBody({}, 2)))),
    )
    assert.equal(new Set(created.map((listing) => listing.listingId)).size, 200)
    const after = stored()
    assert.equal(after.listings, before.listings + 200)
    assert.equal(after.items, before.items + 400)
    assert.equal(after.maxSeq, after.listings)
    assert.equal(after.counter, after.listings)
    assert.equal(after.events, after.listings)
    await writes.close()
  })

  test('a failed create crosses from the thread with its SQLite code, as dialect.ts classifies errors', async () => {
    const writes = openWrites(database)
    const repository = new ListingRepository(database, writes)
    const body = listingBody({}, 1)
    await repository.insert(writeOf(body))
    await assert.rejects(repository.insert(writeOf(body)), { code: 'SQLITE_CONSTRAINT_UNIQUE' })
    await assert.rejects(repository.insert(writeOf(body, 'no-such-provider')), /provider no-such-provider does not exist/)
    await writes.close()
  })
})
