import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { RequestPressure } from '../src/http/request-pressure.js'

// The gauge the webhook worker gives way by (http/request-pressure.ts), on a real server with real requests held
// open, and a clock the test moves: busy once the average in flight over a window reaches the threshold, calm
// again after.

test('busy while requests wait in numbers, averaged over the window; calm again once they are answered', async () => {
  const held: Array<() => void> = []
  const closed: Array<Promise<void>> = []
  let arrivals: { count: number; arrived: () => void } | undefined
  const server = createServer((request, response) => {
    request.resume()
    closed.push(new Promise((resolve) => response.once('close', () => resolve())))
    held.push(() => response.end('ok'))
    if (arrivals && held.length >= arrivals.count) arrivals.arrived()
  })
  /** Resolves once `count` requests are held by the server, so counted as in flight. */
  const untilHeld = (count: number) => new Promise<void>((resolve) => (held.length >= count ? resolve() : (arrivals = { count, arrived: resolve })))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  let now = 1_000
  const pressure = new RequestPressure(100, () => now)
  pressure.watch(server)
  // The threshold is the reader's (the webhook worker's 8); 4 here.
  const busy = () => pressure.average() >= 4
  try {
    now += 120
    assert.equal(busy(), false, 'nothing in flight')

    // 3 in flight for a whole window: below 4 on average.
    const three = Array.from({ length: 3 }, () => fetch(url).then((r) => r.text()))
    await untilHeld(3)
    now += 120
    assert.equal(busy(), false, '3 in flight')

    // 6 in flight for a whole window: busy. Asked again within the window, the verdict stands.
    const more = Array.from({ length: 3 }, () => fetch(url).then((r) => r.text()))
    await untilHeld(6)
    assert.equal(busy(), false, 'within the window, the last verdict stands')
    now += 120
    assert.equal(busy(), true, '6 in flight')
    now += 99
    assert.equal(busy(), true)

    // 6 in flight for half a window, then none: 3 on average.
    now += 1
    busy()
    now += 50
    for (const answer of held.splice(0)) answer()
    assert.deepEqual(await Promise.all([...three, ...more]), Array(6).fill('ok'))
    await Promise.all(closed)
    now += 50
    assert.equal(busy(), false, '6 for half the window, then none')
    now += 120
    assert.equal(busy(), false, 'all answered')
  } finally {
    server.closeAllConnections()
    server.close()
  }
})
