import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { sql } from 'kysely'
import { openDatabase } from '../src/db/connection.js'
import { ROOT } from './process.js'

/**
 * Regression: two instances starting at once on a fresh SQLite file sometimes failed with "database is locked".
 * Switching to WAL answers SQLITE_BUSY at once, without waiting on busy_timeout, while another process holds a
 * lock on the file; openDatabase now retries the switch.
 */
test('openDatabase switches a fresh file to WAL while another process briefly holds its write lock', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'listing-sqlite-open-'))
  try {
    const file = join(dir, 'listings.db')
    // Another process holds the write (RESERVED) lock on the new file, still in rollback-journal mode, for 300 ms:
    // SQLite refuses to wait for it from a reader wanting to write, which is what the WAL switch is.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = new (require('better-sqlite3'))(${JSON.stringify(file)});
         db.exec('create table t (x)'); db.exec('begin immediate'); db.exec('insert into t values (1)'); console.log('locked');
         setTimeout(() => { db.exec('commit'); db.close() }, 300)`,
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    )
    await new Promise((resolve) => holder.stdout.once('data', resolve))
    const database = openDatabase(`sqlite:${file}`)
    try {
      const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(database.kysely)
      assert.equal(mode.rows[0]?.journal_mode, 'wal')
    } finally {
      await database.close()
      await new Promise((resolve) => holder.once('exit', resolve))
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('sqlite::memory: opens (it has no journal file to switch to WAL)', async () => {
  const database = openDatabase('sqlite::memory:')
  try {
    assert.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(database.kysely)).rows, [{ one: 1 }])
  } finally {
    await database.close()
  }
})
