import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { ConsoleSessions } from '../src/console/sessions.js'
import { openDatabase, type Database } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { MarketplaceRepository } from '../src/providers/marketplaces.js'
import { ProviderRepository } from '../src/providers/repository.js'

/**
 * Regression: console sign-ins, tokens and marketplaces were written on the main SQLite connection. While the
 * writer thread held a transaction open between two statements, such a write waited synchronously for the lock on
 * the main thread, the one that would send the transaction its next statement: the event loop stopped for
 * busy_timeout, then the write failed (a console sign-in in CI). Every write now queues on the writer.
 */
test('on a SQLite file, writes of sessions, tokens and marketplaces wait for an open write transaction without stopping the process', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'listing-one-writer-'))
  const database: Database = openDatabase(`sqlite:${join(dir, 'listings.db')}`)
  try {
    await migrate(database)
    const providers = new ProviderRepository(database)
    const sessions = new ConsoleSessions(database)
    const marketplaces = new MarketplaceRepository(database)
    const provider = await providers.create({ name: 'Held Bakery' }, Date.now())

    const writes: Record<string, () => Promise<unknown>> = {
      'sign in with a token': () => sessions.signInWithToken(provider.token.token, Date.now()),
      'sign in with a link': async () => sessions.signInWithLink((await sessions.createLink(provider.id, Date.now())).code, Date.now()),
      'a provider': () => providers.create({ name: 'Second Bakery' }, Date.now()),
      'a token': () => providers.createToken(provider.id, Date.now()),
      'a revocation': async () => providers.revokeToken((await providers.createToken(provider.id, Date.now())).id, Date.now()),
      'a marketplace': () => marketplaces.create('Market', Date.now()),
    }
    for (const [name, write] of Object.entries(writes)) {
      let locked = () => {}
      const holding = new Promise<void>((resolve) => (locked = resolve))
      let ticks = 0
      // The transaction ends only after the event loop has turned: a write that stops the loop cannot let it end.
      const held = database.writer.transaction().execute(async (trx) => {
        await trx.updateTable('providers').set({ name: 'Held Bakery' }).where('id', '=', provider.id).execute()
        locked()
        await new Promise((resolve) => setImmediate(resolve))
        ticks++
      })
      await holding
      const result = await write()
      assert.ok(result !== undefined, `${name}: done`)
      await held
      assert.equal(ticks, 1, name)
    }
  } finally {
    await database.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
