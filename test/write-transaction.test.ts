import assert from 'node:assert/strict'
import { test } from 'node:test'
import { openDatabase } from '../src/db/connection.js'
import { isOneStatementOnPostgres, oneStatementOnPostgres } from '../src/db/write-transaction.js'
import { insertListings } from '../src/listings/create-listing.js'
import { createTestDatabase, testDialects } from './helper.js'

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
