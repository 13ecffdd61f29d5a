import assert from 'node:assert/strict'
import { test } from 'node:test'
import { openDatabase } from '../src/db/connection.js'
import { isOneStatementOnPostgres, oneStatementOnPostgres } from '../src/db/write-transaction.js'
import type { QueryOperation } from '../src/db/query-operation.js'
import { insertListings } from '../src/listings/create-listing.js'
import { patchListing, withdrawListing } from '../src/listings/changes.js'
import { listingBody } from './fixtures.js'
import { createTestDatabase, startService, testDialects } from './helper.js'

for (const dialect of await testDialects()) {
  test(`a write transaction of one statement runs without BEGIN on PostgreSQL only; every other runs in a transaction [${dialect}]`, async () => {
    const testDatabase = await createTestDatabase(dialect)
    const database = openDatabase(testDatabase.url)
    try {
      // The connection the function is given says whether a transaction was begun for it.
      const alone = oneStatementOnPostgres(async (tx) => tx.isTransaction)
      const together = async (tx: { isTransaction: boolean }) => tx.isTransaction
      if (dialect === 'postgres') {
        assert.equal(await database.transact(alone), false)
        assert.equal(await database.transact(together), true)
      } else {
        // SQLite: the writer thread runs only the listed write transactions, each in the group's transaction.
        await assert.rejects(database.transact(alone), /is not in write-transactions\.ts/)
      }
    } finally {
      await database.close()
      await testDatabase.drop()
    }
  })
}

test('the create batch is marked as one statement on PostgreSQL', () => {
  assert.equal(isOneStatementOnPostgres(insertListings), true)
})

if ((await testDialects()).includes('postgres')) {
  test('a PATCH and a withdrawal on PostgreSQL: the listing locked, then one statement writes it with its event', async () => {
    const service = await startService('postgres')
    const seen: QueryOperation[] = []
    const database = openDatabase(service.databaseUrl, { observeQuery: (operation) => seen.push(operation) })
    try {
      const provider = await service.newProvider()
      const created = await service.create(provider.token, listingBody())
      assert.equal(created.status, 201)
      const listingId = (created.body as { listingId: string }).listingId
      const change = { providerId: provider.id, listingId, ifMatch: null, nowMs: service.clock() }
      // BEGIN, the lock, one WITH (a select over the writes it makes: the listing's row, the counter, the event), COMMIT.
      // The listing's next writer waits for that statement and COMMIT alone.
      const lockedThenOne = ['other', 'select', 'select', 'other']
      const patched = await database.transact(patchListing, { ...change, patch: { items: [{ position: 0, quantity: 7 }] } })
      assert.equal(patched.kind, 'done')
      assert.deepEqual(seen.splice(0), lockedThenOne)
      const withdrawn = await database.transact(withdrawListing, change)
      assert.equal(withdrawn.kind, 'done')
      assert.deepEqual(seen.splice(0), lockedThenOne)
      const listing = await service.request('GET', `/api/v1/listing/${listingId}`, { token: provider.token })
      assert.equal((listing.body as { status: string }).status, 'withdrawn')
      const events = await service.request('GET', '/api/v1/events', { token: provider.token })
      assert.deepEqual(
        (events.body as { data: Array<{ type: string }> }).data.map((event) => event.type),
        ['listing.created', 'listing.updated', 'listing.withdrawn'],
      )
    } finally {
      await database.close()
      await service.close()
    }
  })
}
