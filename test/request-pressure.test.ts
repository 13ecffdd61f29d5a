import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { RequestPressure } from '../src/http/request-pressure.js'

// The gauge the webhook worker gives way by (http/request-pressure.ts), on a real server with real requests held
// open: busy once the average in flight over a window reaches the threshold, calm again after.

test('busy while requests wait in numbers, averaged over the window; calm again once they are answered', async () => {
  const held: Array<() => void> = []
  const server = createServer((request, response) => {
    request.resume()
    held.push(() => response.end('ok'))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  const pressure = new RequestPressure(4, 100)
  pressure.watch(server)
  try {
    await sleep(120)
    assert.equal(pressure.busy(), false, 'nothing in flight')

    // 3 in flight for a whole window: below 4 on average.
    const three = Array.from({ length: 3 }, () => fetch(url).then((r) => r.text()))
    while (held.length < 3) await sleep(5)
    await sleep(120)
    assert.equal(pressure.busy(), false, '3 in flight')

    // 6 in flight for a whole window: busy. Asked again within the window, the verdict stands.
    const more = Array.from({ length: 3 }, () => fetch(url).then((r) => r.text()))
    while (held.length < 6) await sleep(5)
    pressure.busy() // starts a window with 6 in flight throughout
    await sleep(120)
    assert.equal(pressure.busy(), true, '6 in flight')
    assert.equal(pressure.busy(), true)

    for (const answer of held.splice(0)) answer()
    assert.deepEqual(await Promise.all([...three, ...more]), Array(6).fill('ok'))
    await sleep(120)
    assert.equal(pressure.busy(), false, 'all answered')
  } finally {
    server.closeAllConnections()
    server.close()
  }
})
