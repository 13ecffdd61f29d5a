import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import SQLite from 'better-sqlite3'
import { loadConfig } from '../src/config.js'
import { ConsoleSessions } from '../src/console/sessions.js'
import { openDatabase, type Database } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { MarketplaceRepository } from '../src/providers/marketplaces.js'
import { ProviderRepository } from '../src/providers/repository.js'

/**
 * Regression: console sign-ins, tokens and marketplaces were written on the main SQLite connection. While the
 * writer thread held a transaction open between two statements, such a write waited synchronously for the lock on
 * the main thread, the one that would send the transaction its next statement: the event loop stopped for
 * busy_timeout, then the write failed (a console sign-in in CI). Every write now goes to the writer thread, which
 * runs each transaction whole; here another connection (as another process would) holds the write lock instead.
 */
test("on a SQLite file, writes of sessions, tokens and marketplaces wait for another connection's write transaction without stopping the process", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'listing-one-writer-'))
  const database: Database = openDatabase(`sqlite:${join(dir, 'listings.db')}`)
  try {
    await migrate(database)
    const providers = new ProviderRepository(database)
    const sessions = new ConsoleSessions(database, loadConfig({}))
    const marketplaces = new MarketplaceRepository(database)
    const provider = await providers.create({ name: 'Held Bakery' }, Date.now())
    const other = new SQLite(join(dir, 'listings.db'))

    const writes: Record<string, () => Promise<unknown>> = {
      'sign in with a token': () => sessions.signInWithToken(provider.token.token, Date.now()),
      'sign in with a link': async () => sessions.signInWithLink((await sessions.createLink(provider.id, Date.now())).code, Date.now()),
      'a provider': () => providers.create({ name: 'Second Bakery' }, Date.now()),
      'a token': () => providers.createToken(provider.id, Date.now()),
      'a revocation': async () => providers.revokeToken((await providers.createToken(provider.id, Date.now())).id, Date.now()),
      'a marketplace': () => marketplaces.create('Market', Date.now()),
      'console sessions revoked': () => sessions.revokeProvider(provider.id, Date.now()),
    }
    for (const [name, write] of Object.entries(writes)) {
      let ticks = 0
      // The other connection's transaction ends only after the event loop has turned: a write that stops the loop
      // cannot let it end.
      other.exec('begin immediate')
      other.prepare('update providers set name = ? where id = ?').run('Held Bakery', provider.id)
      const held = new Promise<void>((resolve) =>
        setImmediate(() => {
          ticks++
          other.exec('commit')
          resolve()
        }),
      )
      const result = await write()
      assert.ok(result !== undefined, `${name}: done`)
      await held
      assert.equal(ticks, 1, name)
    }
    other.close()
  } finally {
    await database.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
