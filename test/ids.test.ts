import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { openDatabase } from '../src/db/connection.js'
import { listingId, listingIdRandomPart } from '../src/ids.js'
import { listingIdSql } from '../src/listings/postgres-writer.js'
import { createTestDatabase, testDialects } from './helper.js'

// A listing id is the creation millisecond, the tick within it and randomness (ids.ts). SQLite stores ids
// made by listingId(); PostgreSQL builds them in SQL (listingIdSql) so a create is one statement. Both must
// give the same id, and ids must sort as (millisecond, tick).

const samples: Array<[ms: number, tick: number]> = [
  [0, 0],
  [1, 1],
  [Date.UTC(2026, 10, 21, 12), 0],
  [Date.UTC(2026, 10, 21, 12), 31],
  [Date.UTC(2026, 10, 21, 12), 32],
  [Date.UTC(2026, 10, 21, 12), 1_000_000],
  [2 ** 48 - 1, 2 ** 35 - 1], // the largest of each part
]

test('listing ids: 26 Crockford base-32 characters that sort by millisecond, then tick', () => {
  const ids = samples.map(([ms, tick]) => listingId(ms, tick))
  for (const id of ids) assert.match(id, /^[0-9A-HJKMNP-TV-Z]{26}$/)
  assert.deepEqual([...ids].sort(), ids)
  assert.match(listingIdRandomPart(), /^[0-9A-HJKMNP-TV-Z]{9}$/)
})

for (const dialect of (await testDialects()).filter((d) => d === 'postgres')) {
  test(`listingIdSql gives exactly listingId's id [${dialect}]`, async () => {
    const testDatabase = await createTestDatabase(dialect)
    const database = openDatabase(testDatabase.url)
    try {
      for (const [ms, tick] of samples) {
        const random = listingIdRandomPart()
        const { rows } = await sql<{ id: string }>`select ${listingIdSql(sql`${ms}::bigint`, sql`${tick}::bigint`, sql`${random}`)} as id`.execute(
          database.kysely,
        )
        assert.equal(rows[0]?.id, listingId(ms, tick, random), `ms ${ms}, tick ${tick}`)
      }
    } finally {
      await database.close()
      await testDatabase.drop()
    }
  })
}
