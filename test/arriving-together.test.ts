import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { ArrivingTogether } from '../src/db/arriving-together.js'

// src/db/arriving-together.ts: what the SQLite threads answer or commit together.

test('items pushed in one turn are handled as one batch, after it; a later turn makes another', async () => {
  const batches: number[][] = []
  const together = new ArrivingTogether<number>((items) => batches.push(items))
  together.push(1)
  together.push(2)
  together.push(3)
  assert.deepEqual(batches, [], 'not at once')
  await nextTurn()
  together.push(4)
  await nextTurn()
  assert.deepEqual(batches, [[1, 2, 3], [4]])
})

test('flush handles what waits at once, and the scheduled turn then finds nothing', async () => {
  const batches: string[][] = []
  const together = new ArrivingTogether<string>((items) => batches.push(items))
  together.push('a')
  together.flush()
  assert.deepEqual(batches, [['a']])
  await nextTurn()
  together.flush()
  assert.deepEqual(batches, [['a']])
})
