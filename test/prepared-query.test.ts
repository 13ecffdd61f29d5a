import assert from 'node:assert/strict'
import { test } from 'node:test'
import { openDatabase } from '../src/db/connection.js'
import { PreparedQuery } from '../src/db/prepared-query.js'
import { migrate } from '../src/db/migrate.js'

test('a PreparedQuery binds new parameters on every execution, and refuses a value that is not a param()', async () => {
  const database = openDatabase('sqlite::memory:')
  try {
    await migrate(database)
    for (const id of ['a', 'b']) {
      await database.kysely
        .insertInto('providers')
        .values({ id, name: `name ${id}`, industry: 'bakery', created_at_ms: 0 })
        .execute()
    }
    const byId = new PreparedQuery<{ id: string }, { name: string }>(database.kysely, (db, param) =>
      db.selectFrom('providers').select('name').where('id', '=', param('id')),
    )
    assert.deepEqual(await byId.execute({ id: 'a' }), [{ name: 'name a' }])
    assert.deepEqual(await byId.execute({ id: 'b' }), [{ name: 'name b' }])
    assert.deepEqual(await byId.execute({ id: 'c' }), [])

    // A literal would be frozen into every execution: refused when first compiled.
    const frozen = new PreparedQuery<{ id: string }, { name: string }>(database.kysely, (db) => db.selectFrom('providers').select('name').where('id', '=', 'a'))
    await assert.rejects(frozen.execute({ id: 'b' }), /is not a param\(\)/)
  } finally {
    await database.close()
  }
})
