import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { openDatabase } from '../src/db/connection.js'
import { listingId, listingIdRandomPart, listingIdSql } from '../src/ids.js'
import { createTestDatabase, testDialects } from './helper.js'

// A listing id is the creation millisecond, the tick within it and randomness (ids.ts): ids must sort as
// (millisecond, tick).

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

test('listingIdSql makes in SQL the id listingId makes, on both databases', async () => {
  for (const dialect of await testDialects()) {
    const fresh = await createTestDatabase(dialect)
    const database = openDatabase(fresh.url)
    try {
      const samples: Array<[number, number]> = [
        [0, 0],
        [1795399275123, 0],
        [1795399275123, 31],
        [1795399275999, 2 ** 35 - 1],
        [2 ** 50 - 1, 123456],
      ]
      for (const [ms, tick] of samples) {
        const random = listingIdRandomPart()
        const { rows } = await sql<{
          id: string
        }>`select ${sql.raw(listingIdSql(`cast(${ms} as bigint)`, `cast(${tick} as bigint)`, `'${random}'`))} as id`.execute(database.kysely)
        assert.equal(rows[0]?.id, listingId(ms, tick, random), `${dialect}: ${ms}, ${tick}`)
      }
    } finally {
      await database.close()
      await fresh.drop()
    }
  }
})
