import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { runEachOnce } from '../bench/each-once.js'
import { COUNTER, loadTool, runLoad, UNIQUE, type RequestKind } from '../bench/load.js'

/**
 * The benchmarks' load (bench/load.ts, bench/each-once.ts) against a server that records what it is sent: a create
 * that repeated a referenceId would be a replay, and a PATCH that repeated a quantity would change nothing, so both
 * would measure less work than they claim.
 */
describe("the benchmarks' load: bodies that differ per request, work sent once", () => {
  const received: Array<{ method: string; path: string; body: string }> = []
  let server: Server
  let baseUrl: string
  before(async () => {
    server = createServer((request, response) => {
      let body = ''
      request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
      request.on('end', () => {
        received.push({ method: request.method ?? '', path: request.url ?? '', body })
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const kind: RequestKind = {
    weight: 1,
    method: 'PATCH',
    path: '/listing',
    headers: { 'content-type': 'application/json' },
    body: `{"referenceId":"${UNIQUE}","items":[{"position":0,"quantity":${COUNTER}}]}`,
  }

  for (const [name, nodeClient] of [
    [loadTool, false],
    ['autocannon', true],
  ] as const) {
    test(`${name}: every body holds a referenceId never sent before and a quantity from 1 to 1,000,000 unlike the last`, async () => {
      received.length = 0
      const result = await runLoad(baseUrl, [kind], { connections: 4, durationS: 1, nodeClient })
      assert.equal(result.failures, 0)
      assert.ok(received.length >= 20, `only ${received.length} requests`)
      const bodies = received.map(({ method, body }) => {
        assert.equal(method, 'PATCH')
        return JSON.parse(body) as { referenceId: string; items: Array<{ position: number; quantity: number }> }
      })
      assert.equal(new Set(bodies.map((body) => body.referenceId)).size, bodies.length, 'a referenceId was sent twice')
      const quantities = bodies.map((body) => body.items[0]?.quantity as number)
      for (const quantity of quantities) assert.ok(Number.isInteger(quantity) && quantity >= 1 && quantity <= 1_000_000, `quantity ${quantity}`)
      assert.equal(new Set(quantities).size, quantities.length, 'a quantity was sent twice')
    })
  }

  test('runEachOnce sends every request of its list exactly once, and counts what was not answered with 2xx', async () => {
    received.length = 0
    const requests = Array.from({ length: 200 }, (_, i): RequestKind => ({ weight: 1, method: 'POST', path: `/each/${i}`, headers: {}, body: `${i}` }))
    const result = await runEachOnce(baseUrl, requests, 7)
    assert.equal(result.requests, 200)
    assert.equal(result.failures, 0)
    // The load before may still have had a request in flight: only this list's are counted.
    const mine = received.filter(({ path }) => path.startsWith('/each/'))
    assert.deepEqual(mine.map(({ path }) => path).sort(), requests.map(({ path }) => path).sort())
    assert.ok(mine.every(({ path, body }) => path === `/each/${body}`))
    const refused = await runEachOnce('http://127.0.0.1:1', requests.slice(0, 3), 2)
    assert.equal(refused.failures, 3)
  })
})
