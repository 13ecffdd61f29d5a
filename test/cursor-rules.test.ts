import assert from 'node:assert/strict'
import { test } from 'node:test'
import { CursorCodec, cursorFormat, discoverQuery } from '../src/discovery/cursor.js'
import type { DiscoverParams } from '../src/discovery/schemas.js'

// Discovery cursors (discovery/cursor.ts) as a plain codec: only a cursor this key signed, for this query, continues it.

const params = discoverQuery({ latitude: 24.7, longitude: 46.6, radiusKm: 5, sort: 'distance' } as DiscoverParams)
const last = { key: 1234.5, id: '01KAXYZ0000000ABCDEFGHJKMN' }
const codec = new CursorCodec(Buffer.alloc(32, 7))

test('a cursor it issued continues the same query where it stopped', () => {
  const cursor = codec.encode(params, last)
  assert.ok(cursorFormat.validate(cursor))
  assert.deepEqual(codec.decode(params, cursor), last)
})

test('a cursor signed with another key, or changed by one character, is not one of ours', () => {
  const cursor = codec.encode(params, last)
  assert.equal(new CursorCodec(Buffer.alloc(32, 8)).decode(params, cursor), 'is not a nextCursor of this API')
  const [payload, mac] = cursor.split('.') as [string, string]
  const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), k: 0 })).toString('base64url')
  assert.equal(codec.decode(params, `${forged}.${mac}`), 'is not a nextCursor of this API')
  const flipped = mac.slice(0, -1) + (mac.endsWith('A') ? 'B' : 'A')
  assert.equal(codec.decode(params, `${payload}.${flipped}`), 'is not a nextCursor of this API')
})

test('a cursor of another query is refused, saying which parameters must match', () => {
  const cursor = codec.encode(params, last)
  const refused = codec.decode(discoverQuery({ latitude: 24.7, longitude: 46.6, radiusKm: 6, sort: 'distance' } as DiscoverParams), cursor)
  assert.equal(typeof refused, 'string')
  assert.match(refused as string, /other latitude, longitude, radiusKm, sort or minDiscountRate/)
})

test('text that is not a cursor fails its format before any key is used', () => {
  for (const text of ['', 'abc', 'a.b', `${'x'.repeat(241)}.${'y'.repeat(22)}`]) assert.equal(cursorFormat.validate(text), false, text)
})
