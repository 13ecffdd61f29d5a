import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import SQLite from 'better-sqlite3'
import { SqliteReadCache } from '../src/db/sqlite-read-cache.js'

const dir = mkdtempSync(join(tmpdir(), 'listing-read-cache-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** A WAL database with a table t, the cache's connection, and another connection (another thread or process). */
function setup(name: string) {
  const file = join(dir, `${name}.db`)
  const own = new SQLite(file)
  own.pragma('journal_mode = WAL')
  own.exec('create table t (x integer)')
  const other = new SQLite(file)
  let reads = 0
  const cache = new SqliteReadCache<number>(own, 3)
  // What the service caches is a query's result; here, the count of t's rows, read on the cache's connection.
  const read = async () => {
    reads++
    return (own.prepare('select count(*) as n from t').get() as { n: number }).n
  }
  return { own, other, cache, read, reads: () => reads }
}

test('a result is reused while nothing is committed, and read again after another connection commits', async () => {
  const { other, cache, read, reads } = setup('other')
  assert.equal(await cache.get('k', read), 0)
  assert.equal(await cache.get('k', read), 0)
  assert.equal(reads(), 1)
  other.exec('insert into t values (1)')
  assert.equal(await cache.get('k', read), 1, 'a commit on another connection is seen')
  assert.equal(reads(), 2)
})

test("the cache's own connection writing also ends every entry", async () => {
  const { own, cache, read, reads } = setup('own')
  assert.equal(await cache.get('k', read), 0)
  own.exec('insert into t values (1)')
  assert.equal(await cache.get('k', read), 1)
  assert.equal(reads(), 2)
})

test('a value read while another lookup saw a newer version is not kept', async () => {
  const { other, cache, read, reads } = setup('race')
  let release!: () => void
  const slow = cache.get('k', async () => {
    await new Promise<void>((resolve) => (release = resolve))
    return read()
  })
  other.exec('insert into t values (1)')
  assert.equal(await cache.get('j', read), 1) // sees the newer version
  release()
  assert.equal(await slow, 1)
  assert.equal(await cache.get('k', read), 1)
  assert.equal(reads(), 3, "the slow lookup's value was read again, not kept under the old version")
})

test('at most maxEntries entries: the oldest goes first', async () => {
  const { cache, read, reads } = setup('size')
  for (const key of ['a', 'b', 'c', 'd']) await cache.get(key, read)
  assert.equal(reads(), 4)
  await cache.get('d', read)
  await cache.get('b', read)
  assert.equal(reads(), 4, 'b and d are kept')
  await cache.get('a', read)
  assert.equal(reads(), 5, 'a was dropped')
})
