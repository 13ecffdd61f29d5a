import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { createTestDatabase, readResponse } from './helper.js'
import { assertProblem } from './http-support.js'
import { killAll, startServer } from './process.js'

/*
 * The routes anyone may call without a token (/openapi.json, /docs, /metrics), against the service as a real
 * process: a client hammering them is limited by its address, whatever headers it sends; the health probes are
 * not; and /metrics can be moved to a port of its own.
 */

after(killAll)

describe('routes without a token', { timeout: 60_000 }, () => {
  test('a client hammering /openapi.json, /docs and /metrics is limited by its address; X-Forwarded-For does not reset it', async () => {
    const database = await createTestDatabase('sqlite')
    const server = await startServer({ DATABASE_URL: database.url, PUBLIC_RATE_LIMIT_PER_MINUTE: '4' })
    try {
      const get = async (path: string, headers: Record<string, string> = {}) => readResponse(await fetch(`${server.baseUrl}${path}`, { headers }))
      for (const path of ['/openapi.json', '/docs', '/metrics', '/openapi.json']) assert.notEqual((await get(path)).status, 429, path)
      for (const [path, headers] of [
        ['/openapi.json', {}],
        ['/metrics', { 'x-forwarded-for': '203.0.113.9' }],
        ['/docs', { 'x-real-ip': '203.0.113.10', forwarded: 'for=203.0.113.11' }],
      ] as const) {
        const limited = await get(path, headers)
        assertProblem(limited, 429, 'rate-limited')
        assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/, path)
      }
      assert.equal((await get('/healthz')).status, 200, 'the health probes are not limited')
      assert.equal((await get('/readyz')).status, 200)
    } finally {
      await server.stop('SIGKILL')
      await database.drop()
    }
  })

  test('METRICS_PORT serves /metrics on its own port, and the API port no longer does', async () => {
    const database = await createTestDatabase('sqlite')
    const server = await startServer({ DATABASE_URL: database.url, METRICS_PORT: '0' })
    try {
      const ready = await server.waitForLog((line) => line.msg === 'ready')
      const metricsUrl = String(ready.metrics)
      assert.match(metricsUrl, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
      assert.notEqual(new URL(metricsUrl).port, String(server.port))
      const own = await fetch(metricsUrl)
      assert.equal(own.status, 200)
      assert.match(await own.text(), /listing_http_requests_total/)
      assert.equal((await fetch(`${new URL(metricsUrl).origin}/openapi.json`)).status, 404, 'only /metrics is served there')
      assert.equal((await fetch(`${server.baseUrl}/metrics`)).status, 404)
      assert.equal((await server.stop('SIGTERM')).code, 0, 'a drain closes the metrics port too')
    } finally {
      await server.stop('SIGKILL')
      await database.drop()
    }
  })
})
