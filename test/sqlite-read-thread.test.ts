import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { openDatabase, type Database } from '../src/db/connection.js'
import type { SqliteReadThread } from '../src/db/sqlite-read-thread.js'
import { createTestDatabase, type TestDatabase } from './helper.js'

// The SQLite reader thread (src/db/sqlite-read-thread.ts) on a real file: reads beside the event loop.

describe('SQLite reader thread', () => {
  let fresh: TestDatabase
  let database: Database
  let reads: SqliteReadThread
  const observed: number[] = []
  before(async () => {
    fresh = await createTestDatabase('sqlite')
    database = openDatabase(fresh.url, { observeQuery: (operation, seconds) => operation === 'select' && observed.push(seconds) })
    await sql`create table t (n integer primary key, label text)`.execute(database.kysely)
    reads = database.sqlite?.reads as SqliteReadThread
    assert.ok(reads, 'a SQLite file has a reader thread')
  })
  after(async () => {
    await database.close()
    await fresh.drop()
  })

  test('sees every commit made before the read, on any connection, and is observed', async () => {
    await sql`insert into t (n, label) values (1, 'one')`.execute(database.kysely)
    assert.deepEqual(await reads.all('select n, label from t where n >= ?', [1]), [{ n: 1, label: 'one' }])
    await sql`insert into t (n, label) values (2, 'two')`.execute(database.kysely)
    assert.deepEqual(await reads.all('select n from t where n >= ? order by n', [1]), [{ n: 1 }, { n: 2 }])
    const before = observed.length
    await reads.all('select count(*) as c from t', [])
    assert.equal(observed.length, before + 1)
  })

  test('rows cross by column and come back as the main connection returns them: every type, nulls, no rows', async () => {
    // A column of numbers crosses as a Float64Array; a column holding anything else, as values.
    const text = `select 1 as i, 2.5 as r, 'x' as t, null as z, x'0102' as b, 9007199254740991 as big
      union all select -3, 0.1, 'é€', null, x'', -9007199254740991
      union all select 7, null, '', 1, x'ff', 0`
    const main = await sql.raw(text).execute(database.kysely)
    const threaded = await reads.all<Record<string, unknown>>(text, [])
    assert.deepEqual(threaded, main.rows)
    assert.deepEqual(Object.keys(threaded[0] as object), ['i', 'r', 't', 'z', 'b', 'big'])
    assert.deepEqual(await reads.all('select n from t where n > ?', [1000]), [])
  })

  test('a long read leaves the event loop free', async () => {
    // ~100 ms of work on the thread; a 5 ms timer on the event loop fires long before it ends.
    const slow = reads.all('with recursive c(i) as (select 1 union all select i + 1 from c where i < 3000000) select count(*) as n from c', [])
    let settled = false
    void slow.then(() => (settled = true))
    await new Promise((resolve) => setTimeout(resolve, 5))
    assert.equal(settled, false, 'the timer fired only after the read')
    assert.deepEqual(await slow, [{ n: 3000000 }])
  })

  test('an error rejects that read only, with SQLite’s code; writes are refused and leave the file unchanged', async () => {
    await assert.rejects(reads.all('select * from no_such_table', []), { name: 'SqliteError', code: 'SQLITE_ERROR' })
    await assert.rejects(reads.all("insert into t (n, label) values (3, 'three')", []), { code: 'SQLITE_MISUSE' })
    assert.deepEqual(await reads.all('select count(*) as c from t', []), [{ c: 2 }])
  })

  test('reads asked together are answered in one message, each with its own rows or error, each observed', async () => {
    // The thread answers every read waiting in its port with one message; ids must still pair each answer.
    const before = observed.length
    const asked = Array.from({ length: 40 }, (_, k) =>
      k === 17 ? reads.all('select * from no_such_table', []) : reads.all<{ k: number }>('select ? as k', [k]))
    const settled = await Promise.allSettled(asked)
    settled.forEach((result, k) => {
      if (k === 17) assert.equal(result.status, 'rejected')
      else assert.deepEqual(result, { status: 'fulfilled', value: [{ k }] })
    })
    assert.equal(observed.length, before + 40)
  })

  test('after close, the next read starts a thread again and is answered', async () => {
    await reads.close()
    assert.deepEqual(await reads.all('select 1 as one', []), [{ one: 1 }])
  })
})
