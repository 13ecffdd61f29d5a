import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Kysely } from 'kysely'
import { openDatabase } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { beforeMigration, createTestDatabase, testDialects } from './helper.js'
import { GLOBAL_TABLES, readTableKeys, shardKeyViolations, type TableKeys } from './schema-keys.js'

// docs/sharding.md: every table of provider data carries provider_id and leads its keys with it. A new table or
// key that breaks the rule fails here; a table that is rightly global goes in GLOBAL_TABLES, with its reason.

for (const dialect of await testDialects()) {
  test(`every table of provider data leads its keys with provider_id [${dialect}]`, async () => {
    const testDatabase = await createTestDatabase(dialect)
    const database = openDatabase(testDatabase.url)
    try {
      await migrate(database)
      const tables = await readTableKeys(database.kysely as Kysely<any>, dialect)
      assert.ok(tables.some((table) => table.name === 'listings'))
      assert.deepEqual(shardKeyViolations(tables), [])
    } finally {
      await database.close()
      await testDatabase.drop()
    }
  })
}

for (const dialect of await testDialects()) {
  test(`the rule finds what kept the schema before 2026-11-25-shard-ready-keys from sharding [${dialect}]`, async () => {
    await beforeMigration(dialect, '2026-11-25-shard-ready-keys', async ({ db }) => {
      // Migrations run by hand here: no schema_migrations table, which the rule would report.
      const found = shardKeyViolations(await readTableKeys(db, dialect)).filter((line) => !line.startsWith('schema_migrations:'))
      const keyName = (table: string) => (dialect === 'sqlite' ? `${table} primary key` : `${table}_pkey`)
      assert.deepEqual(found, [
        `events: key ${keyName('events')} (id) does not lead with provider_id`,
        `listings: key ${keyName('listings')} (id) does not lead with provider_id`,
        'webhook_attempts: no provider_id column',
        `webhook_deliveries: key ${keyName('webhook_deliveries')} (id) does not lead with provider_id`,
        `webhook_endpoints: key ${keyName('webhook_endpoints')} (id) does not lead with provider_id`,
      ])
    })
  })
}

test('a foreign key between provider tables that leaves out provider_id, and a stale allow-list entry, are found', () => {
  const tables: TableKeys[] = Object.keys(GLOBAL_TABLES)
    .filter((name) => name !== 'service_keys')
    .map((name) => ({ name, columns: ['id'], uniques: [], foreignKeys: [] }))
  tables.push({
    name: 'listing_photos',
    columns: ['provider_id', 'listing_id', 'position'],
    uniques: [{ name: 'listing_photos_pkey', columns: ['provider_id', 'listing_id', 'position'] }],
    foreignKeys: [{ name: 'listing_photos_listing', columns: ['listing_id'], references: 'listings' }],
  })
  assert.deepEqual(shardKeyViolations(tables), [
    'service_keys: allowed as global, but there is no such table',
    'listing_photos: foreign key listing_photos_listing (listing_id) → listings leaves out provider_id',
  ])
})
