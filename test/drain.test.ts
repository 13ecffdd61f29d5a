import assert from 'node:assert/strict'
import { Agent } from 'node:http'
import { connect, type Socket } from 'node:net'
import { after, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import type { DialectName } from '../src/db/connection.js'
import { item, listingBody } from './fixtures.js'
import { createTestDatabase, testDialects, type TestDatabase } from './helper.js'
import { postCreate, tryConnect } from './http-support.js'
import { serveBytes, IMAGES, startImageServer, type ImageServer } from './image-server.js'
import { killAll, runCli, startServer, type Exit } from './process.js'

/**
 * docs/operations.md#shutdown-and-drain: SIGTERM or SIGINT stops accepting connections, finishes in-flight requests (here: creates
 * waiting on slow image probes), closes the database and exits 0 within 10 s. test/server.test.ts covers one
 * create whose body is half sent at the signal; this file covers many creates, keep-alive connections, the 503
 * for requests that arrive during the drain, a second signal, and work that cannot finish in time.
 */

after(killAll)

const dialects = await testDialects()

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * An image server whose /slow?… answers are held until release(): until then every probe the service starts
 * waits on it. Each item names its own URL, so nothing is served from the prober's cache.
 */
async function startHeldImageServer(): Promise<ImageServer & { held(): number; release(): void }> {
  let held = 0
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const server = await startImageServer('127.0.0.1', {
    '/slow': (request, response) => {
      held += 1
      void released.then(() => serveBytes(request, response, IMAGES.png, { contentType: 'image/png' }))
    },
  })
  after(() => server.close())
  return { ...server, held: () => held, release }
}

/** A create body of `items` items, brand and every item with an image URL of its own on `images`. */
function slowBody(images: ImageServer, name: string, items: number): Record<string, any> {
  const body = listingBody({}, 0)
  body.brand.imageUrl = images.url(`/slow?listing=${name}&image=brand`)
  body.items = Array.from({ length: items }, (_, i) => item(i, { imageUrl: images.url(`/slow?listing=${name}&image=${i}`) }))
  return body
}

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: any
}

/**
 * How a fresh connection attempt ends once the listener has closed. The "draining" log line is written as the
 * drain begins, and Fastify closes the listener a few event-loop turns later (71 ms once, on a busy machine).
 */
async function refusal(port: number): Promise<string> {
  const deadline = Date.now() + 2000
  for (;;) {
    const outcome = await tryConnect(port)
    if (outcome !== 'connected' || Date.now() > deadline) return outcome
    await sleep(10)
  }
}

/**
 * A keep-alive connection opened before the drain: one full GET answered 200 on it, then the first half of
 * the next request sent, so the connection is busy (a request has begun) and survives the server's close of
 * idle connections. finish() sends the rest and resolves with what the server answers before it closes.
 */
async function openConnection(port: number, path: string, headers: Record<string, string> = {}) {
  const socket: Socket = connect({ host: '127.0.0.1', port })
  socket.setEncoding('utf8')
  let received = ''
  socket.on('data', (chunk: string) => (received += chunk))
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.on('error', () => {})
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  const head = [`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...Object.entries(headers).map(([n, v]) => `${n}: ${v}`)].join('\r\n')
  socket.write(`${head}\r\n\r\n`)
  while (!/\r\n\r\n[\s\S]*\}$/.test(received)) {
    await sleep(10)
    if (socket.destroyed) throw new Error(`connection closed after the first request: ${received}`)
  }
  const first = parseResponse(received)
  received = ''
  socket.write(head) // no blank line: the request has begun, its headers are not complete
  return {
    first,
    async finish(): Promise<Answer> {
      socket.write('\r\n\r\n')
      await ended
      return parseResponse(received)
    },
  }
}

function parseResponse(text: string): Answer {
  const [head = '', body = ''] = text.split('\r\n\r\n')
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: body === '' ? undefined : JSON.parse(body) }
}

function within(ms: number, promise: Promise<Exit>): Promise<Exit | string> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`still running after ${ms} ms`), ms)))
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** A fresh database with one provider made by the real CLI; its token. */
async function databaseWithProvider(dialect: DialectName): Promise<{ database: TestDatabase; token: string }> {
  const database = await createTestDatabase(dialect)
  after(() => database.drop())
  const made = await runCli(['provider', 'create', '--name', 'drain test'], { DATABASE_URL: database.url })
  assert.equal(made.code, 0, made.stderr)
  return { database, token: JSON.parse(made.stdout).token }
}

/** listing id → its item count, read straight from the database after the process has exited. */
async function storedItemCounts(dialect: DialectName, url: string): Promise<Map<string, number>> {
  const query =
    dialect === 'sqlite'
      ? 'select id, json_array_length(items_record) as n from listings'
      : 'select id, json_array_length(items_record::json) as n from listings'
  let rows: Array<{ id: string; n: number | string }>
  if (dialect === 'sqlite') {
    const sqlite = new SQLite(url.slice('sqlite:'.length), { readonly: true })
    try {
      rows = sqlite.prepare(query).all() as typeof rows
    } finally {
      sqlite.close()
    }
  } else {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      rows = (await client.query(query)).rows
    } finally {
      await client.end()
    }
  }
  return new Map(rows.map((row) => [row.id, Number(row.n)]))
}

function assertUnavailable(answer: Answer, what: string): void {
  assert.equal(answer.status, 503, `${what}: ${JSON.stringify(answer)}`)
  assert.match(String(answer.headers['content-type']), /^application\/problem\+json/)
  assert.equal(answer.body.type, '/problems/unavailable')
  assert.equal(answer.body.status, 503)
  assert.equal(String(answer.headers.connection).toLowerCase(), 'close', `${what}: the connection is closed after it`)
  assert.ok(answer.headers['x-request-id'], `${what}: X-Request-Id`)
}

// Each test has its own database, process and image server, and mostly waits: they run side by side.
describe('drain', { concurrency: true }, () => {
  for (const dialect of dialects) {
    describe(`SIGTERM drains [${dialect}]`, () => {
      test('10 creates of 50 items waiting on image probes all answer 201 and are stored; exit 0 within 10 s', async () => {
        const images = await startHeldImageServer()
        const { database, token } = await databaseWithProvider(dialect)
        // 510 images waiting for one provider. Each create's whole wait is bounded by IMAGE_FETCH_TIMEOUT_MS: long
        // here, so that only the drain decides.
        const server = await startServer({ DATABASE_URL: database.url, IMAGE_FETCH_TIMEOUT_MS: '30000' })
        const agent = new Agent({ keepAlive: true })
        after(() => agent.destroy())
        try {
          const readyz = await openConnection(server.port, '/readyz')
          const list = await openConnection(server.port, '/api/v1/listing', { authorization: `Bearer ${token}` })
          const healthz = await openConnection(server.port, '/healthz')
          assert.deepEqual([readyz.first.status, list.first.status, healthz.first.status], [200, 200, 200])

          const bodies = Array.from({ length: 10 }, (_, n) => slowBody(images, `drain-${n}`, 50))
          const creates = bodies.map((body) => postCreate(server.port, agent, token, body))
          // Awaited below; until then a failure elsewhere must be reported as itself, not as their hang-up.
          for (const pending of creates) pending.catch(() => {})
          // 48 is one provider's share of the prober's 64 fetches (fair-slots.ts): creates fill it, the rest queue behind.
          while (images.held() < 48) await sleep(20)
          await sleep(300)

          server.child.kill('SIGTERM')
          const signalledAt = Date.now()
          await server.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('draining'))

          // Refused, or reset: a connection the kernel queued just before the listener closed is reset, not served.
          assert.match(await refusal(server.port), /^ECONN(REFUSED|RESET)$/, 'no new connection during the drain')
          assertUnavailable(await readyz.finish(), 'GET /readyz during the drain')
          assertUnavailable(await list.finish(), 'GET /api/v1/listing during the drain')
          const alive = await healthz.finish()
          assert.equal(alive.status, 200, 'GET /healthz: the process still runs')
          assert.equal(alive.headers.connection, 'close')

          // The probes have now waited 1.5 s or more; the rest of each create's images answer at once.
          await sleep(Math.max(0, signalledAt + 1500 - Date.now()))
          images.release()
          const answers = await Promise.all(creates)
          for (const answer of answers) {
            assert.equal(answer.status, 201, JSON.stringify(answer.body))
            // Keep-alive connections busy at the signal end with their answer, or close() would wait for them.
            assert.equal(answer.headers.connection, 'close')
          }

          const exit = await within(10_000 - (Date.now() - signalledAt), server.closed)
          assert.deepEqual(exit, { code: 0, signal: null })
          assert.ok(
            server.logLines().some((line) => line.msg === 'stopped'),
            'the log says it stopped',
          )

          const stored = await storedItemCounts(dialect, database.url)
          assert.equal(stored.size, 10)
          for (const answer of answers) assert.equal(stored.get(answer.body.listingId), 50)
        } finally {
          await server.stop('SIGKILL')
        }
      })
    })
  }

  describe('SIGINT and the edges of the drain [sqlite]', { concurrency: true, skip: !dialects.includes('sqlite') && 'DIALECTS excludes sqlite' }, () => {
    test('a service whose stdout reader has gone still drains and exits 0 on SIGTERM', async () => {
      // Its log lines now meet a broken pipe (EPIPE). With pino's asynchronous default the exit-time flush
      // retried that write every 100 ms forever, blocking the event loop: this test then timed out.
      const { database } = await databaseWithProvider('sqlite')
      const server = await startServer({ DATABASE_URL: database.url })
      try {
        server.child.stdout?.destroy()
        // The first line to meet the broken pipe is the drain's own.
        server.child.kill('SIGTERM')
        assert.deepEqual(await within(10_000, server.closed), { code: 0, signal: null })
      } finally {
        await server.stop('SIGKILL')
      }
    })

    test('SIGINT drains the same way; a second and third signal during the drain change nothing', async () => {
      const images = await startHeldImageServer()
      const { database, token } = await databaseWithProvider('sqlite')
      const server = await startServer({ DATABASE_URL: database.url })
      const agent = new Agent({ keepAlive: true })
      after(() => agent.destroy())
      try {
        const creates = [0, 1].map((n) => postCreate(server.port, agent, token, slowBody(images, `sigint-${n}`, 5)))
        for (const pending of creates) pending.catch(() => {})
        while (images.held() < 12) await sleep(20)

        server.child.kill('SIGINT')
        const signalledAt = Date.now()
        await server.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('draining'))
        server.child.kill('SIGINT')
        server.child.kill('SIGTERM')
        await server.waitForLog((line) => line.msg === 'already draining' && line.signal === 'SIGTERM')
        assert.equal(await refusal(server.port), 'ECONNREFUSED')

        images.release()
        const answers = await Promise.all(creates)
        assert.deepEqual(
          answers.map((answer) => answer.status),
          [201, 201],
        )
        assert.deepEqual(await within(10_000 - (Date.now() - signalledAt), server.closed), { code: 0, signal: null })
        assert.ok(server.logLines().some((line) => line.msg === 'stopped'))
        const stored = await storedItemCounts('sqlite', database.url)
        assert.deepEqual(
          answers.map((answer) => stored.get(answer.body.listingId)),
          [5, 5],
        )
      } finally {
        await server.stop('SIGKILL')
      }
    })

    test('work that cannot finish: a create waiting on an image that never answers is cut with 503, a body never finished is dropped; exit 0 within 10 s', async () => {
      const images = await startImageServer()
      after(() => images.close())
      const { database, token } = await databaseWithProvider('sqlite')
      // The probe's own budget is longer than the grace: only the drain's cut can end this request in time.
      const server = await startServer({ DATABASE_URL: database.url, IMAGE_FETCH_TIMEOUT_MS: '60000' })
      const agent = new Agent({ keepAlive: true })
      after(() => agent.destroy())
      try {
        const body = listingBody({}, 2)
        body.items[1].imageUrl = images.url('/hang')
        const answer = postCreate(server.port, agent, token, body)
        while (!images.requests.some((r) => r.path === '/hang')) await sleep(20)
        // A client that announces 1000 bytes and sends 10: its request can never be answered.
        const stalled = connect({ host: '127.0.0.1', port: server.port })
        let stalledGot = ''
        stalled.setEncoding('utf8').on('data', (chunk: string) => (stalledGot += chunk))
        stalled.on('error', () => {})
        const stalledClosed = new Promise<void>((resolve) => stalled.once('close', () => resolve()))
        stalled.write(
          `POST /api/v1/listing/create HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
            'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"referen',
        )
        await sleep(200)

        server.child.kill('SIGTERM')
        const signalledAt = Date.now()
        assertUnavailable(await answer, 'the create cut by the drain')
        assert.deepEqual(await within(10_000 - (Date.now() - signalledAt), server.closed), { code: 0, signal: null })
        await stalledClosed
        assert.equal(stalledGot, '', 'the stalled request was dropped unanswered (it never was a request)')
        assert.ok(server.logLines().some((line) => line.msg.startsWith('grace running out') && line.requests === 1))
        assert.ok(server.logLines().some((line) => line.msg === 'stopped'))
        assert.equal((await storedItemCounts('sqlite', database.url)).size, 0, 'nothing was stored')
      } finally {
        await server.stop('SIGKILL')
      }
    })
  })
})
