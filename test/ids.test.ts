import assert from 'node:assert/strict'
import { test } from 'node:test'
import { listingId, listingIdRandomPart } from '../src/ids.js'

// A listing id is the creation millisecond, the tick within it and randomness (ids.ts): ids must sort as
// (millisecond, tick).

const samples: Array<[ms: number, tick: number]> = [
  [0, 0],
  [1, 1],
  [Date.UTC(2026, 10, 21, 12), 0],
  [Date.UTC(2026, 10, 21, 12), 31],
  [Date.UTC(2026, 10, 21, 12), 32],
  [Date.UTC(2026, 10, 21, 12), 1_000_000],
  [2 ** 48 - 1, 2 ** 35 - 1], // the largest of each part
]

test('listing ids: 26 Crockford base-32 characters that sort by millisecond, then tick', () => {
  const ids = samples.map(([ms, tick]) => listingId(ms, tick))
  for (const id of ids) assert.match(id, /^[0-9A-HJKMNP-TV-Z]{26}$/)
  assert.deepEqual([...ids].sort(), ids)
  assert.match(listingIdRandomPart(), /^[0-9A-HJKMNP-TV-Z]{9}$/)
})
