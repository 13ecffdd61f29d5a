import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { openDatabase } from '../src/db/connection.js'
import { createTestDatabase, testDialects } from './helper.js'
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
  })
}

describe('two instances starting at once on one fresh SQLite file', () => {
  test('both come up and exactly one prints a demo token', async () => {
    const database = await createTestDatabase('sqlite')
    try {
      const servers = await Promise.all([
        startServer({ DATABASE_URL: database.url }),
        startServer({ DATABASE_URL: database.url }),
      ])
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
