import assert from 'node:assert/strict'
import { test } from 'node:test'
import { TrailingBatches, type Settled } from '../src/trailing-batches.js'

/** Batches that are recorded and ended by hand: each answers every item with `${item}@${batch number}`. */
function manualBatches(maxBatch?: number) {
  const batches: Array<{ key: string; items: string[]; end(): void; fail(error: Error): void }> = []
  const runner = new TrailingBatches<string, string>(
    (items, key) =>
      new Promise<Array<Settled<string>>>((resolve, reject) => {
        const number = batches.length + 1
        batches.push({ key, items, end: () => resolve(items.map((item) => ({ ok: true, value: `${item}@${number}` }))), fail: reject })
      }),
    { maxBatch },
  )
  return { batches, runner }
}
const tick = () => new Promise((resolve) => setImmediate(resolve))

test('alone, an item starts at once; items submitted while a batch runs go together in the next, never in the running one', async () => {
  const { batches, runner } = manualBatches()
  const first = runner.submit('k', 'a')
  assert.deepEqual(
    batches.map((batch) => batch.items),
    [['a']],
  )
  const during = [runner.submit('k', 'b'), runner.submit('k', 'c'), runner.submit('k', 'd')]
  assert.equal(batches.length, 1, 'nothing more starts while a batch runs')
  batches[0]?.end()
  assert.equal(await first, 'a@1')
  await tick()
  assert.deepEqual(
    batches.map((batch) => batch.items),
    [['a'], ['b', 'c', 'd']],
  )
  const late = runner.submit('k', 'e') // while the second runs: waits for a third
  batches[1]?.end()
  assert.deepEqual(await Promise.all(during), ['b@2', 'c@2', 'd@2'])
  await tick()
  batches[2]?.end()
  assert.equal(await late, 'e@3')
})

test('a failed batch fails its own items only; the next batch runs', async () => {
  const { batches, runner } = manualBatches()
  const first = runner.submit('k', 'a')
  const waiting = runner.submit('k', 'b')
  batches[0]?.fail(new Error('down'))
  await assert.rejects(first, /down/)
  await tick()
  batches[1]?.end()
  assert.equal(await waiting, 'b@2')
})

test('one outcome per item: an item can fail alone', async () => {
  const runner = new TrailingBatches<number, number>(async (items) =>
    items.map((n) => (n % 2 === 0 ? { ok: true, value: n * 10 } : { ok: false, error: new Error(`odd ${n}`) })),
  )
  const blocker = runner.submit('k', 0)
  const [two, three] = [runner.submit('k', 2), runner.submit('k', 3)]
  assert.equal(await blocker, 0)
  assert.equal(await two, 20)
  await assert.rejects(three, /odd 3/)
})

test('different keys never share a batch, and each batch is run with its key', async () => {
  const { batches, runner } = manualBatches()
  const a = runner.submit('a', 'x')
  const b = runner.submit('b', 'y')
  assert.deepEqual(
    batches.map((batch) => batch.items),
    [['x'], ['y']],
  )
  assert.deepEqual(
    batches.map((batch) => batch.key),
    ['a', 'b'],
  )
  batches[0]?.end()
  batches[1]?.end()
  assert.deepEqual(await Promise.all([a, b]), ['x@1', 'y@2'])
})

test('beyond maxBatch, the rest waits for the batch after, in order', async () => {
  const { batches, runner } = manualBatches(2)
  const all = ['a', 'b', 'c', 'd', 'e', 'f'].map((item) => runner.submit('k', item))
  for (let i = 0; i < 4; i++) {
    batches[i]?.end()
    await tick()
  }
  assert.deepEqual(
    batches.map((batch) => batch.items),
    [['a'], ['b', 'c'], ['d', 'e'], ['f']],
  )
  assert.deepEqual(await Promise.all(all), ['a@1', 'b@2', 'c@2', 'd@3', 'e@3', 'f@4'])
})

test('a runner that throws instead of rejecting fails its batch, and the key is free again', async () => {
  let calls = 0
  const runner = new TrailingBatches<number, number>((items) => {
    calls++
    if (calls === 1) throw new Error('synchronous')
    return Promise.resolve(items.map((n) => ({ ok: true, value: n })))
  })
  await assert.rejects(runner.submit('k', 1), /synchronous/)
  assert.equal(await runner.submit('k', 2), 2)
})

test('with maxRunning 2, a second batch starts while the first runs; later items wait for either to end', async () => {
  const batches: Array<{ items: string[]; end(): void }> = []
  const runner = new TrailingBatches<string, string>(
    (items) =>
      new Promise((resolve) => {
        batches.push({ items, end: () => resolve(items.map((item) => ({ ok: true, value: item }))) })
      }),
    { maxRunning: 2 },
  )
  const all = ['a', 'b', 'c', 'd'].map((item) => runner.submit('k', item))
  assert.deepEqual(
    batches.map((batch) => batch.items),
    [['a'], ['b']],
  )
  batches[1]?.end()
  await tick()
  assert.deepEqual(
    batches.map((batch) => batch.items),
    [['a'], ['b'], ['c', 'd']],
  )
  batches[0]?.end()
  batches[2]?.end()
  assert.deepEqual(await Promise.all(all), ['a', 'b', 'c', 'd'])
})
