import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Representations } from '../src/listings/representations.js'

const whole = (name: string) => () => ({ name, items: [{ quantity: 3 }, { quantity: 0 }] })

test('a listing at a version is made once in each form, and both forms are kept together', () => {
  const kept = new Representations(1024)
  let made = 0
  const first = kept.of('a', 1, () => (made++, whole('a')()))
  assert.equal(
    kept.of('a', 1, () => (made++, whole('other')())),
    first,
  )
  assert.equal(kept.get('a', 1), first)
  assert.deepEqual(first.quantities, [3, 0])
  assert.equal(first.bytes.toString(), JSON.stringify(whole('a')()))
  const entry = kept.pageEntry('a', 1, () => (made++, { id: 'a' }))
  assert.equal(
    kept.pageEntry('a', 1, () => (made++, { id: 'other' })),
    entry,
  )
  assert.equal(entry, '{"id":"a"}')
  assert.equal(kept.get('a', 1), first, 'the page entry did not replace the whole form')
  assert.equal(made, 2)
})

test('another version replaces both forms of the one kept', () => {
  const kept = new Representations(1024)
  kept.of('a', 1, whole('v1'))
  kept.pageEntry('a', 1, () => ({ v: 1 }))
  assert.equal(
    kept.pageEntry('a', 2, () => ({ v: 2 })),
    '{"v":2}',
  )
  assert.equal(kept.get('a', 1), undefined, 'version 1 whole went with its entry')
  assert.equal(kept.get('a', 2), undefined, 'version 2 has no whole form yet')
  assert.equal(
    kept.pageEntry('a', 1, () => ({ v: 'again' })),
    '{"v":"again"}',
  )
})

test('bounded by the bytes of both forms: once over, the listings kept first go until an eighth is free, never the one being kept', () => {
  const entry = () => ({ pad: 'x'.repeat(40) })
  const size = JSON.stringify(entry()).length
  // A whole form of `size` bytes: '{"pad":"', the padding, '","items":[]}'.
  const wholeOfSize = () => ({ pad: 'x'.repeat(size - 21), items: [] })
  const kept = new Representations(size * 8)
  const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']
  for (const id of ids) kept.pageEntry(id, 1, entry)
  let made = 0
  const ask = (id: string) => kept.pageEntry(id, 1, () => (made++, entry()))
  for (const id of ids) ask(id)
  assert.equal(made, 0, 'within the bound, all eight are kept')

  // a's whole form takes it an entry over the bound: b and c, the oldest but a, go, which frees an eighth.
  const aWhole = kept.of('a', 1, wholeOfSize)
  assert.equal(aWhole.bytes.length, size)
  assert.equal(kept.get('a', 1), aWhole, 'a, the one being kept, stays with both forms')
  for (const id of ['a', 'd', 'e', 'f', 'g', 'h']) ask(id)
  assert.equal(made, 0, 'the rest are still kept')
  ask('b')
  assert.equal(made, 1, 'b was let go and made again')
  // b fits again; c takes it over: a, now the oldest, goes with both its forms, and that frees an eighth.
  ask('c')
  assert.equal(made, 2, 'c was let go and made again')
  assert.equal(kept.get('a', 1), undefined)
  for (const id of ['b', 'c', 'd', 'e', 'f', 'g', 'h']) ask(id)
  assert.equal(made, 2, 'the others are still kept')
})
