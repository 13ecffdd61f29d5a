import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Kysely } from 'kysely'
import { openDatabase } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { beforeMigration, createTestDatabase, testDialects } from './helper.js'
import { GLOBAL_TABLES, PLACED_BY, readTableKeys, shardKeyViolations, type TableKeys } from './schema-keys.js'

// docs/sharding.md: every table of provider data carries provider_id and leads its keys with it; an owner's event
// stream and webhooks (a provider's or a marketplace's) lead with owner_id, a marketplace's own tables with
// marketplace_id. A new table or key that breaks the rule fails here; a table that is rightly global goes in
// GLOBAL_TABLES, one placed by another column than provider_id in PLACED_BY, each with its reason.

for (const dialect of await testDialects()) {
  test(`every table of one tenant's data leads its keys with its provider_id, owner_id or marketplace_id [${dialect}]`, async () => {
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
      // Migrations run by hand here: no schema_migrations table, which the rule would report. The stream's tables
      // were then a provider's, placed by provider_id.
      const found = shardKeyViolations(await readTableKeys(db, dialect), {}).filter((line) => !line.startsWith('schema_migrations:'))
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

for (const dialect of await testDialects()) {
  test(`the rule finds the stream's tables placed by provider_id before 2026-11-27-event-owners, and none after [${dialect}]`, async () => {
    await beforeMigration(dialect, '2026-11-27-event-owners', async ({ db, next }) => {
      // The marketplaces' index of their reservations came with a later migration.
      const { marketplace_reservations: _later, ...placedByThen } = PLACED_BY
      const found = async () => shardKeyViolations(await readTableKeys(db, dialect), placedByThen).filter((line) => !line.startsWith('schema_migrations:'))
      assert.deepEqual(await found(), [
        'events: no owner_id column',
        'webhook_attempts: no owner_id column',
        'webhook_deliveries: no owner_id column',
        'webhook_endpoints: no owner_id column',
      ])
      await next.up(db, dialect)
      assert.deepEqual(await found(), [])
    })
  })
}

test('each kind of table by its own column: a key or foreign key that leaves it out, and stale list entries, are found', () => {
  const tables: TableKeys[] = [...Object.keys(GLOBAL_TABLES), ...Object.keys(PLACED_BY)]
    .filter((name) => name !== 'service_keys' && name !== 'webhook_attempts')
    .map((name) => ({ name, columns: ['id', PLACED_BY[name]?.column ?? 'id'], uniques: [], foreignKeys: [] }))
  tables.push({
    name: 'listing_photos',
    columns: ['provider_id', 'listing_id', 'position'],
    uniques: [{ name: 'listing_photos_pkey', columns: ['provider_id', 'listing_id', 'position'] }],
    foreignKeys: [{ name: 'listing_photos_listing', columns: ['listing_id'], references: 'listings' }],
  })
  // A stream's table keyed by provider, and a marketplace's own table keyed by its reference alone.
  tables.push({
    name: 'events_by_provider',
    columns: ['owner_id', 'provider_id', 'id'],
    uniques: [{ name: 'ebp_pkey', columns: ['provider_id', 'id'] }],
    foreignKeys: [],
  })
  tables.push({
    name: 'marketplace_references',
    columns: ['marketplace_id', 'reference_id'],
    uniques: [{ name: 'marketplace_references_pkey', columns: ['reference_id', 'marketplace_id'] }],
    foreignKeys: [],
  })
  const placedBy = {
    ...PLACED_BY,
    events_by_provider: { column: 'owner_id', why: 'test' },
    marketplace_references: { column: 'marketplace_id', why: 'test' },
  } as const
  assert.deepEqual(shardKeyViolations(tables, placedBy), [
    'service_keys: listed as global, but there is no such table',
    'webhook_attempts: listed as placed by another column, but there is no such table',
    'listing_photos: foreign key listing_photos_listing (listing_id) → listings leaves out provider_id',
    'events_by_provider: key ebp_pkey (provider_id, id) does not lead with owner_id',
    'marketplace_references: key marketplace_references_pkey (reference_id, marketplace_id) does not lead with marketplace_id',
  ])
})
