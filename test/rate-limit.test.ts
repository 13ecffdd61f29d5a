import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import net from 'node:net'
import { Writable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { pino } from 'pino'
import { buildApp } from '../src/app.js'
import { openDatabase, type Database } from '../src/db/connection.js'
import { MemoryStore } from '../src/rate-limit/memory-store.js'
import { listingBody } from './fixtures.js'
import { createTestDatabase, describeEachDialect, readResponse, startService, TEST_REDIS_URL, testRedis, type Response, type TestService } from './helper.js'
import { assertProblem } from './http-support.js'
import { startServer } from './process.js'
import { parseExposition, valueOf } from './prometheus-text.js'
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js'

// docs/api.md#rate-limits: over RATE_LIMIT_PER_MINUTE requests in a minute, one provider gets 429 with Retry-After; every
// response after authentication carries RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-11).

const LIMIT = 3
const limited = { RATE_LIMIT_PER_MINUTE: String(LIMIT) }
// Bodies pass validation and every image "loads": these tests are about counting, not about images.
const acceptImages = async () => {}

/** The RateLimit header's parameters, or undefined when the response has none. */
function rateLimitOf(response: Response): { remaining: number; reset: number } | undefined {
  const value = response.headers.get('ratelimit')
  if (value === null) return undefined
  const match = /^"default";r=(\d+);t=(\d+)$/.exec(value)
  assert.ok(match, `RateLimit: ${value}`)
  return { remaining: Number(match[1]), reset: Number(match[2]) }
}

/** Asserts both headers are there and says what RateLimit reports. */
function assertHeaders(response: Response, limit: number, expected: { remaining: number; reset: number }): void {
  const context = `${response.status} ${response.text.slice(0, 300)}`
  assert.equal(response.headers.get('ratelimit-policy'), `"default";q=${limit};w=60`, context)
  assert.deepEqual(rateLimitOf(response), expected, context)
}

function assertNoHeaders(response: Response): void {
  assert.equal(response.headers.get('ratelimit-policy'), null)
  assert.equal(response.headers.get('ratelimit'), null)
  assert.equal(response.headers.get('retry-after'), null)
}

function assertRateLimited(response: Response, limit: number, retryAfter: number): void {
  assertProblem(response, 429, 'rate-limited')
  assert.equal(response.headers.get('retry-after'), String(retryAfter))
  assertHeaders(response, limit, { remaining: 0, reset: retryAfter })
}

await describeEachDialect(
  'rate limit, counted in memory',
  (service) => {
    test('the limit is served, the next request is 429 with Retry-After, and remaining counts down', async () => {
      const { token } = await service.newProvider()
      for (let remaining = LIMIT - 1; remaining >= 0; remaining--) {
        const response = await service.list(token)
        assert.equal(response.status, 200, response.text)
        assertHeaders(response, LIMIT, { remaining, reset: 60 })
      }
      assertRateLimited(await service.list(token), LIMIT, 60)
      // Creates share the budget, and a refused create is refused before its body is read or stored.
      assertRateLimited(await service.create(token, listingBody()), LIMIT, 60)
      assert.equal((await service.list(token)).status, 429)
    })

    test('another provider has its own budget', async () => {
      const busy = await service.newProvider()
      const other = await service.newProvider()
      for (let i = 0; i <= LIMIT; i++) await service.list(busy.token)
      assert.equal((await service.list(busy.token)).status, 429)
      const response = await service.create(other.token, listingBody())
      assert.equal(response.status, 201, response.text)
      assertHeaders(response, LIMIT, { remaining: LIMIT - 1, reset: 60 })
    })

    test('Retry-After counts down with the clock, and the window resets when the clock passes it', async () => {
      const { token } = await service.newProvider()
      for (let i = 0; i < LIMIT; i++) assert.equal((await service.list(token)).status, 200)
      service.clock.now += 45_500
      // 14.5 s left: whole seconds, rounded up.
      assertRateLimited(await service.list(token), LIMIT, 15)
      service.clock.now += 14_499
      assertRateLimited(await service.list(token), LIMIT, 1)
      service.clock.now += 1
      const fresh = await service.list(token)
      assert.equal(fresh.status, 200, fresh.text)
      assertHeaders(fresh, LIMIT, { remaining: LIMIT - 1, reset: 60 })
    })

    test('errors answered after authentication carry the headers: 400, 404, 409; a 401 carries none and costs nothing', async () => {
      const { token } = await service.newProvider()
      const invalid = await service.list(token, '?limit=51')
      assertProblem(invalid, 400, 'invalid-request')
      assertHeaders(invalid, LIMIT, { remaining: 2, reset: 60 })

      const unknownPath = await service.request('GET', '/api/v1/nothing-here', { token })
      assertProblem(unknownPath, 404, 'not-found')
      assertHeaders(unknownPath, LIMIT, { remaining: 1, reset: 60 })

      const unauthenticated = await service.request('GET', '/api/v1/listing')
      assertProblem(unauthenticated, 401, 'unauthorized')
      assertNoHeaders(unauthenticated)
      const badToken = await service.request('GET', '/api/v1/listing', { token: `lst_${'A'.repeat(43)}` })
      assertProblem(badToken, 401, 'unauthorized')
      assertNoHeaders(badToken)

      // The two 401s spent nothing: this is the provider's third request, the last one of its budget.
      assertHeaders(await service.list(token), LIMIT, { remaining: 0, reset: 60 })

      const other = await service.newProvider()
      const body = listingBody()
      assert.equal((await service.create(other.token, body)).status, 201)
      const conflict = await service.create(other.token, { ...body, location: { latitude: 1, longitude: 1 } })
      assertProblem(conflict, 409, 'conflict')
      assertHeaders(conflict, LIMIT, { remaining: 1, reset: 60 })
    })

    test('paths outside /api/v1 are neither limited nor labelled', async () => {
      for (let i = 0; i <= LIMIT; i++) {
        const response = await service.request('GET', '/healthz')
        assert.equal(response.status, 200)
        assertNoHeaders(response)
      }
    })
  },
  { env: limited, checkImages: acceptImages },
)

/** A TCP server that counts the connections made to it: a Redis that must never be asked anything. */
async function connectionCounter(): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  let connections = 0
  const server = net.createServer((socket) => {
    connections += 1
    socket.destroy()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    connections: () => connections,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

describe('RATE_LIMIT_PER_MINUTE=0', () => {
  test('disables the limiter: no 429, no headers, no store ever contacted', async () => {
    const redis = await connectionCounter()
    const service = await startService('sqlite', { env: { RATE_LIMIT_PER_MINUTE: '0', REDIS_URL: redis.url } })
    try {
      const { token } = await service.newProvider()
      for (let i = 0; i < 5; i++) {
        const response = await service.list(token)
        assert.equal(response.status, 200, response.text)
        assertNoHeaders(response)
      }
      assert.equal(redis.connections(), 0)
    } finally {
      await service.close()
      await redis.close()
    }
  })
})

describe('MemoryStore', () => {
  test('a window ends on time for its key, also between two sweeps', async () => {
    const store = new MemoryStore(60_000)
    await store.hit('a', 0)
    assert.deepEqual(await store.hit('b', 30_000), { count: 1, resetAtMs: 90_000 })
    assert.deepEqual(await store.hit('b', 89_999), { count: 2, resetAtMs: 90_000 })
    // The sweep of t=60 000 came before b's window ended; the next is not due before t=120 000.
    await store.hit('a', 60_000)
    assert.deepEqual(await store.hit('b', 90_000), { count: 1, resetAtMs: 150_000 })
  })

  test('keeps no window past its end: memory is bounded by the keys of the last two windows', async () => {
    const store = new MemoryStore(60_000)
    for (let i = 0; i < 1000; i++) await store.hit(`provider-${i}`, 1_000_000 + i)
    assert.equal(store.size, 1000)
    // Still within the first window of every key.
    await store.hit('provider-0', 1_059_000)
    assert.equal(store.size, 1000)
    assert.deepEqual(await store.hit('late', 1_061_000), { count: 1, resetAtMs: 1_121_000 })
    assert.equal(store.size, 1)
  })
})

describe('the OpenAPI document', () => {
  test('names the headers where they are sent: RateLimit on every /api/v1 answer but 401, Retry-After on 429', async () => {
    const service = await startService('sqlite')
    try {
      const document = (await service.request('GET', '/openapi.json')).body
      for (const path of ['/api/v1/listing', '/api/v1/listing/create']) {
        const responses = Object.values(document.paths[path] as Record<string, any>)[0].responses as Record<string, any>
        assert.ok(responses['429'], path)
        for (const [status, response] of Object.entries(responses)) {
          const headers = Object.keys(response.headers ?? {})
          const expected = status === '401' ? [] : ['RateLimit', 'RateLimit-Policy']
          assert.deepEqual(headers.filter((name) => name.startsWith('RateLimit')).sort(), expected, `${path} ${status}`)
          assert.equal(headers.includes('Retry-After'), status === '429', `${path} ${status}`)
        }
      }
      assert.equal((await service.request('GET', '/healthz')).headers.get('ratelimit'), null)
    } finally {
      await service.close()
    }
  })
})

describe('rate-limit store failures in the log', () => {
  test('are warned about at most once per 10 s, with the number of requests served unlimited meanwhile', async () => {
    const closed = await connectionCounter()
    await closed.close()
    const lines: any[] = []
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)))
          done()
        },
      }),
    )
    const service = await startService('sqlite')
    const app = await buildApp({
      config: { ...service.config, RATE_LIMIT_PER_MINUTE: LIMIT, REDIS_URL: closed.url },
      database: service.database,
      clock: service.clock,
      logger,
    })
    try {
      const { token } = await service.newProvider()
      const list = () => app.inject({ method: 'GET', url: '/api/v1/listing', headers: { authorization: `Bearer ${token}` } })
      for (let i = 0; i < 5; i++) assert.equal((await list()).statusCode, 200)
      service.clock.now += 9_999
      assert.equal((await list()).statusCode, 200)
      service.clock.now += 1
      assert.equal((await list()).statusCode, 200)
      const warnings = lines.filter((line) => line.msg === 'rate-limit store failed; serving without limits')
      assert.deepEqual(
        warnings.map((line) => line.requestsServedUnlimited),
        [1, 6],
      )
      assert.equal(warnings[0].level, 40)
    } finally {
      await app.close()
      await service.close()
    }
  })
})

describe('the service as a process, with REDIS_URL at a closed port', () => {
  test('starts, serves without limit, warns once in its log, and exits 0 on SIGTERM', async () => {
    const closed = await connectionCounter()
    await closed.close()
    const database = await createTestDatabase('sqlite')
    const server = await startServer({ DATABASE_URL: database.url, REDIS_URL: closed.url }, { timeoutMs: 30_000 })
    try {
      const [token] = server.printedTokens()
      for (let i = 0; i < 3; i++) {
        const response = await fetch(`${server.baseUrl}/api/v1/listing`, { headers: { authorization: `Bearer ${token}` } })
        assert.equal(response.status, 200)
        assert.equal(response.headers.get('ratelimit'), null)
      }
      const warning = await server.waitForLog((line) => line.msg === 'rate-limit store failed; serving without limits')
      assert.equal(warning.level, 40)
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
      const warnings = server.logLines().filter((line) => line.msg === warning.msg)
      assert.equal(warnings.length, 1)
      // The connection errors themselves stay out of stderr (ioredis prints them there when nobody listens).
      assert.doesNotMatch(server.stderr(), /ioredis/)
    } finally {
      await server.stop('SIGKILL')
      await database.drop()
    }
  })
})

// ---- Redis: one budget for every instance, and a Redis that fails never fails a request -----------------------------

/** A Redis key prefix of this test's own, so that tests sharing one Redis never count each other's requests. */
function newKeyPrefix(): string {
  return `listing-service-test:${randomBytes(6).toString('hex')}:rate:`
}

async function deleteKeys(prefix: string): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL)
  try {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
  } finally {
    redis.disconnect()
  }
}

/** A second instance of the service: its own app and database connection over the first one's database. */
async function secondInstance(service: TestService, keyPrefix: string) {
  const database: Database = openDatabase(service.databaseUrl)
  const app: FastifyInstance = await buildApp({ config: service.config, database, clock: service.clock, rateLimit: { keyPrefix } })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  return {
    async list(token: string): Promise<Response> {
      return readResponse(await fetch(`${address}/api/v1/listing`, { headers: { authorization: `Bearer ${token}` } }))
    },
    async close() {
      await app.close()
      await database.close()
    },
  }
}

if (await testRedis()) {
  describe('rate limit shared through Redis [sqlite]', () => {
    test('two instances share one budget: the limit split across both, then 429 on either', async () => {
      const keyPrefix = newKeyPrefix()
      const env = { ...limited, REDIS_URL: TEST_REDIS_URL }
      const first = await startService('sqlite', { env, rateLimit: { keyPrefix } })
      const second = await secondInstance(first, keyPrefix)
      try {
        const { id, token } = await first.newProvider()
        const instances = [first, second]
        for (let i = 0; i < LIMIT; i++) {
          const response = await instances[i % 2]!.list(token)
          assert.equal(response.status, 200, response.text)
          assert.equal(rateLimitOf(response)?.remaining, LIMIT - 1 - i)
        }
        for (const instance of instances) {
          const response = await instance.list(token)
          assertProblem(response, 429, 'rate-limited')
          // Redis's own expiry times the window: at most 60 s, at least 1.
          const retryAfter = Number(response.headers.get('retry-after'))
          assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${retryAfter}`)
        }
        const other = await first.newProvider()
        assert.equal((await second.list(other.token)).status, 200)

        // The count lives under the prefix, keyed by provider id, and expires with its window.
        const redis = new Redis(TEST_REDIS_URL)
        try {
          assert.equal(await redis.get(`${keyPrefix}${id}`), String(LIMIT + 2))
          const ttl = await redis.pttl(`${keyPrefix}${id}`)
          assert.ok(ttl > 0 && ttl <= 60_000, `PTTL ${ttl}`)
        } finally {
          redis.disconnect()
        }
      } finally {
        await second.close()
        await first.close()
        await deleteKeys(keyPrefix)
      }
    })
  })

  describe('the Redis connection [sqlite]', () => {
    test('is closed with the app', async () => {
      const proxy = await startTcpProxy(TEST_REDIS_URL, { defaultPort: 6379 })
      const keyPrefix = newKeyPrefix()
      try {
        const service = await startService('sqlite', { env: { ...limited, REDIS_URL: proxy.via(TEST_REDIS_URL) }, rateLimit: { keyPrefix } })
        const { token } = await service.newProvider()
        assert.ok(rateLimitOf(await service.list(token)))
        assert.equal(proxy.connections(), 1)
        await service.close()
        const deadline = Date.now() + 5000
        while (proxy.connections() > 0) {
          assert.ok(Date.now() < deadline, 'the connection is still open 5 s after the app closed')
          await new Promise((resolve) => setTimeout(resolve, 20))
        }
      } finally {
        await proxy.close()
        await deleteKeys(keyPrefix)
      }
    })
  })

  describe('rate limit when Redis fails [sqlite]', () => {
    const keyPrefix = newKeyPrefix()
    const storeErrors: Error[] = []
    const service = {} as TestService
    let proxy: TcpProxy

    before(async () => {
      proxy = await startTcpProxy(TEST_REDIS_URL, { defaultPort: 6379 })
      Object.assign(
        service,
        await startService('sqlite', {
          env: { ...limited, REDIS_URL: proxy.via(TEST_REDIS_URL) },
          checkImages: acceptImages,
          rateLimit: { keyPrefix, onStoreError: (error) => storeErrors.push(error) },
        }),
      )
    })
    after(async () => {
      await service.close?.()
      await proxy?.close()
      await deleteKeys(keyPrefix)
    })

    /** A request that must be answered, limiter or not, within a generous bound. */
    async function promptly(send: () => Promise<Response>): Promise<Response> {
      let timer: NodeJS.Timeout | undefined
      const bound = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('no answer within 3 s')), 3000)
      })
      try {
        return await Promise.race([send(), bound])
      } finally {
        clearTimeout(timer)
      }
    }

    /** Waits (up to 15 s) until the limiter counts again: a response with RateLimit headers. */
    async function untilCounted(token: string): Promise<Response> {
      const deadline = Date.now() + 15_000
      for (;;) {
        const response = await service.list(token)
        if (rateLimitOf(response)) return response
        assert.ok(Date.now() < deadline, 'the limiter did not recover within 15 s')
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }

    /**
     * Over the limit with Redis gone, for at least `outageMs`: every request is served, none limited, none
     * labelled. Answers the store errors reported meanwhile, one per request.
     */
    async function assertServedUnlimited(outageMs: number): Promise<Error[]> {
      const { token } = await service.newProvider()
      const errorsBefore = storeErrors.length
      const started = Date.now()
      let sent = 0
      while (sent <= LIMIT + 1 || Date.now() - started < outageMs) {
        const create = sent % 2 === 0
        const response = await promptly(() => (create ? service.create(token, listingBody({ referenceId: `outage-${sent}` })) : service.list(token)))
        assert.equal(response.status, create ? 201 : 200, response.text)
        assertNoHeaders(response)
        sent += 1
        if (sent > LIMIT + 1) await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const errors = storeErrors.slice(errorsBefore)
      assert.equal(errors.length, sent)
      // Operators see the same count in /metrics.
      const metrics = parseExposition((await service.request('GET', '/metrics')).text)
      assert.equal(valueOf(metrics, 'listing_rate_limit_store_errors_total'), storeErrors.length)
      return errors
    }

    /** After Redis is back, without a restart: counted again, and limited again. */
    async function assertLimitedAgain(): Promise<void> {
      const { token } = await service.newProvider()
      const first = await untilCounted(token)
      const used = LIMIT - rateLimitOf(first)!.remaining
      for (let i = used; i < LIMIT; i++) assert.equal((await service.list(token)).status, 200)
      assertProblem(await service.list(token), 429, 'rate-limited')
    }

    test('while Redis answers, it limits', async () => {
      await assertLimitedAgain()
      assert.equal(storeErrors.length, 0)
    })

    test('Redis refusing connections: requests are served promptly without limit; limiting resumes when it is back', async () => {
      proxy.refuse()
      // Long enough for several reconnect attempts to fail: the client must keep trying in the background.
      const errors = await assertServedUnlimited(2500)
      // Known to be down, Redis is not waited for: each request fails its count at once, not on a timeout.
      assert.deepEqual(
        errors.filter((error) => /timed out/i.test(error.message)),
        [],
      )
      proxy.forward()
      await assertLimitedAgain()
    })

    test('Redis not answering on an open connection: the command times out, requests are served; it resumes', async () => {
      proxy.stall()
      const errors = await assertServedUnlimited(0)
      assert.ok(
        errors.some((error) => /timed out/i.test(error.message)),
        errors.map(String).join('\n'),
      )
      proxy.forward()
      await assertLimitedAgain()
    })

    test('Redis not answering: once a request has waited out the command timeout, the next ones do not wait', async () => {
      const { token } = await service.newProvider()
      proxy.stall()
      const durations: number[] = []
      try {
        for (let i = 0; i < 10; i++) {
          const started = performance.now()
          const response = await promptly(() => service.list(token))
          durations.push(performance.now() - started)
          assert.equal(response.status, 200, response.text)
          assertNoHeaders(response)
        }
      } finally {
        proxy.forward()
      }
      // The command timeout is 200 ms: without the limiter's back-off, every one of these waited for it.
      const waited = durations.filter((ms) => ms >= 200).length
      assert.ok(waited <= 3, `${waited} of 10 requests waited for Redis: ${durations.map(Math.round).join(', ')} ms`)
      await assertLimitedAgain()
    })
  })
}
