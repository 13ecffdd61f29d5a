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

test('bounded by the bytes of both forms: the listings kept first go first, never the one being kept', () => {
  const text = (n: number) => ({ pad: 'x'.repeat(n) })
  const size = JSON.stringify(text(40)).length
  const kept = new Representations(size * 3)
  kept.pageEntry('a', 1, () => text(40))
  kept.pageEntry('b', 1, () => text(40))
  kept.pageEntry('c', 1, () => text(40))
  let made = 0
  kept.pageEntry('a', 1, () => (made++, text(40)))
  assert.equal(made, 0, 'within the bound, all three are kept')
  // a's whole form takes it over the bound: b, the oldest but a, goes, and that is enough.
  kept.of('a', 1, () => ({ ...text(20), items: [] }))
  kept.pageEntry('a', 1, () => (made++, text(40)))
  kept.pageEntry('c', 1, () => (made++, text(40)))
  assert.equal(made, 0, 'a, the one being kept, and c are still kept')
  kept.pageEntry('b', 1, () => (made++, text(40)))
  assert.equal(made, 1, 'b was let go and made again')
  // b back over the bound: a, now the oldest, goes with both its forms.
  assert.equal(kept.get('a', 1), undefined)
  kept.pageEntry('c', 1, () => (made++, text(40)))
  assert.equal(made, 1, 'c is still kept')
})
