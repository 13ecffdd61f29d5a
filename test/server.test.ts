import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { listingBody } from './fixtures.js'
import { createTestDatabase, testDialects, type TestDatabase } from './helper.js'
import { tryConnect } from './http-support.js'
import { CLI, cleanEnv, killAll, run, startServer, TOKEN_SHAPE, type ServerProcess } from './process.js'

/** docs/operations.md#commands, the demo provider, #health-and-readiness and #shutdown-and-drain: the service as `npm start` runs it, a real process on a real database. */

after(killAll)

const dialects = await testDialects()

/** A temp folder removed when the file's tests end. */
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'listing-server-test-'))
  after(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

function fakeToken(): string {
  return `lst_${randomBytes(32).toString('base64url')}`
}

interface Answer {
  status: number
  headers: Headers
  body: any
}

async function get(server: ServerProcess, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(`${server.baseUrl}${path}`, { headers })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

describe('serve on a fresh SQLite database', () => {
  let database: TestDatabase
  let server: ServerProcess
  let token: string

  before(async () => {
    database = await createTestDatabase('sqlite')
    server = await startServer({ DATABASE_URL: database.url })
  })
  after(async () => {
    await server?.stop('SIGKILL')
    await database?.drop()
  })

  test('the first start prints a demo token on stdout, and it works on GET /api/v1/listing', async () => {
    const tokens = server.printedTokens()
    assert.equal(tokens.length, 1, `one demo token on stdout:\n${server.stdout()}`)
    token = tokens[0] as string
    assert.match(token, TOKEN_SHAPE)
    assert.ok(
      server.logLines().every((line) => !JSON.stringify(line).includes(token)),
      'the banner is not a log line',
    )
    const response = await get(server, '/api/v1/listing', { authorization: `Bearer ${token}` })
    assert.equal(response.status, 200)
    assert.deepEqual(response.body, { recordCount: 0, content: [] })
  })

  test("the banner's example curl command uses the port the server listens on (PORT=0 is not shown as :0)", () => {
    assert.match(server.stdout(), new RegExp(`curl .*http://127\\.0\\.0\\.1:${server.port}/api/v1/listing`))
  })

  test('GET /healthz and GET /readyz answer 200', async () => {
    assert.equal((await get(server, '/healthz')).status, 200)
    assert.equal((await get(server, '/readyz')).status, 200)
  })

  test('every response has X-Request-Id; a valid client X-Request-Id is echoed', async () => {
    const answers = [
      await get(server, '/healthz'),
      await get(server, '/readyz'),
      await get(server, '/no-such-page'),
      await get(server, '/api/v1/listing'),
      await get(server, '/api/v1/listing', { authorization: `Bearer ${token}` }),
    ]
    assert.deepEqual(
      answers.map((a) => a.status),
      [200, 200, 404, 401, 200],
    )
    const ids = answers.map((a) => a.headers.get('x-request-id'))
    for (const id of ids) assert.match(id ?? '', /^[\x21-\x7E]{1,128}$/)
    assert.equal(new Set(ids).size, ids.length, 'generated ids differ')

    const mine = 'client-id_0123:abc/XYZ'
    assert.equal((await get(server, '/healthz', { 'x-request-id': mine })).headers.get('x-request-id'), mine)
    const unauthorized = await get(server, '/api/v1/listing', { 'x-request-id': mine })
    assert.equal(unauthorized.status, 401)
    assert.equal(unauthorized.headers.get('x-request-id'), mine)
    const longest = 'x'.repeat(128)
    assert.equal((await get(server, '/healthz', { 'x-request-id': longest })).headers.get('x-request-id'), longest)

    // Not valid (too long, or not visible ASCII): replaced by a generated one.
    for (const bad of ['x'.repeat(129), 'has space']) {
      const id = (await get(server, '/healthz', { 'x-request-id': bad })).headers.get('x-request-id')
      assert.ok(id !== null && id !== '' && id !== bad, `${bad} is not echoed`)
    }
  })

  test('one JSON "request" log line per request; no log line holds a token or "authorization"', async () => {
    const unknown = fakeToken()
    const ids = { list: `log-list-${Date.now()}`, unauthorized: `log-401-${Date.now()}`, missing: `log-404-${Date.now()}` }
    const list = await get(server, '/api/v1/listing?limit=5', { authorization: `Bearer ${token}`, 'x-request-id': ids.list })
    const refused = await get(server, '/api/v1/listing', { authorization: `Bearer ${unknown}`, 'x-request-id': ids.unauthorized })
    const missing = await get(server, '/nowhere', { 'x-request-id': ids.missing })
    assert.deepEqual([list.status, refused.status, missing.status], [200, 401, 404])

    // Stop the server so that every line is written before it is read.
    const exit = await server.stop('SIGTERM')
    assert.deepEqual(exit, { code: 0, signal: null })

    const lines = server.logLines()
    const byRequest = (id: string) => lines.filter((line) => line.requestId === id)
    const expected: Array<[id: string, method: string, status: number, authenticated: boolean]> = [
      [ids.list, 'GET', 200, true],
      [ids.unauthorized, 'GET', 401, false],
      [ids.missing, 'GET', 404, false],
    ]
    for (const [id, method, status, authenticated] of expected) {
      const mine = byRequest(id)
      assert.equal(mine.length, 1, `exactly one log line for request ${id}: ${JSON.stringify(mine)}`)
      const line = mine[0] as Record<string, any>
      assert.equal(line.msg, 'request')
      assert.equal(line.method, method)
      assert.equal(line.status, status)
      assert.ok('route' in line, 'names the route')
      assert.equal(typeof line.durationMs, 'number')
      assert.ok(line.durationMs >= 0)
      if (authenticated) assert.match(line.providerId ?? '', /^prv_/)
      else assert.equal(line.providerId, undefined)
    }
    assert.equal(byRequest(ids.list)[0]?.route, '/api/v1/listing')

    assert.ok(lines.length > 0)
    for (const line of lines) {
      const text = JSON.stringify(line)
      assert.ok(!text.includes(token), `a log line holds the demo token: ${text}`)
      assert.ok(!text.includes(unknown), `a log line holds the refused token: ${text}`)
      assert.doesNotMatch(text, /authorization/i)
      assert.doesNotMatch(text, /lst_/)
    }
  })

  test('a second start on the same file prints no token; SIGINT stops it with exit 0', async () => {
    const second = await startServer({ DATABASE_URL: database.url })
    try {
      assert.deepEqual(second.printedTokens(), [])
      assert.doesNotMatch(second.stdout(), /lst_/)
      assert.equal((await get(second, '/api/v1/listing', { authorization: `Bearer ${token}` })).status, 200, 'the demo token still works')
      const started = Date.now()
      assert.deepEqual(await second.stop('SIGINT'), { code: 0, signal: null })
      assert.ok(Date.now() - started < 10_000)
    } finally {
      await second.stop('SIGKILL')
    }
  })
})

describe('serve on PostgreSQL', { skip: !dialects.includes('postgres') && 'PostgreSQL does not answer' }, () => {
  test('a fresh database gets no demo provider and no token is printed; /readyz is 503 when it goes away', async () => {
    const database = await createTestDatabase('postgres')
    const server = await startServer({ DATABASE_URL: database.url })
    try {
      assert.equal((await get(server, '/readyz')).status, 200)
      assert.deepEqual(server.printedTokens(), [])
      assert.doesNotMatch(server.stdout(), /lst_|demo/)
      const client = new pg.Client({ connectionString: database.url })
      await client.connect()
      try {
        assert.deepEqual((await client.query('select count(*)::int as n from providers')).rows, [{ n: 0 }])
      } finally {
        await client.end()
      }

      // docs/operations.md#health-and-readiness: /readyz is 503 once the database stops answering (here: it is dropped under the server).
      await database.drop()
      const id = `readyz-${Date.now()}`
      const unready = await get(server, '/readyz', { 'x-request-id': id })
      assert.equal(unready.status, 503)
      assert.equal(unready.body.type, '/problems/unavailable')
      assert.equal((await get(server, '/healthz')).status, 200, 'the process still runs')
      const line = await server.waitForLog((l) => l.requestId === id && l.msg === 'request')
      assert.equal(line.status, 503)
    } finally {
      await server.stop('SIGKILL')
      await database.drop()
    }
  })

  test('regression: a URL with the host as a parameter (libpq’s socket form) started, then exited 1 on its ready line', async () => {
    const database = await createTestDatabase('postgres')
    const url = new URL(database.url)
    // postgres://user:secret@/name?host=…&port=…: no host in the authority, so no WHATWG URL; pg takes the host from the query.
    const hostless = `postgres://${url.username}:hunter2secret@${url.pathname}?host=${url.hostname}&port=${url.port || '5432'}`
    const server = await startServer({ DATABASE_URL: hostless })
    try {
      assert.equal((await get(server, '/readyz')).status, 200)
      const ready = await server.waitForLog((l) => l.msg === 'ready')
      assert.match(ready.data, /^PostgreSQL postgres:\/\/[^:@]*@\//)
      assert.ok(!server.stdout().includes('hunter2secret') && !server.stderr().includes('hunter2secret'), 'the password is not shown')
    } finally {
      await server.stop('SIGKILL')
      await database.drop()
    }
  })
})

describe('serve with no configuration', () => {
  test('stores its data in ./data/listings.db under the working directory', async () => {
    const cwd = tempDir()
    const server = await startServer({}, { cwd })
    try {
      assert.equal(server.printedTokens().length, 1)
      const file = join(cwd, 'data', 'listings.db')
      assert.ok(existsSync(file), `${file} exists`)
      const sqlite = new SQLite(file, { readonly: true })
      try {
        assert.deepEqual(sqlite.prepare('select name from providers').all(), [{ name: 'demo' }])
      } finally {
        sqlite.close()
      }
    } finally {
      await server.stop('SIGKILL')
    }
  })
})

describe('bad configuration stops start-up before listening', { concurrency: 4 }, () => {
  const cases: Array<[variable: string, value: string]> = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://admin:hunter2secret@db.example.com/listings'],
    ['LOG_LEVEL', 'loud'],
    ['IMAGE_ALLOW_PRIVATE_NETWORKS', 'yes'],
    ['RATE_LIMIT_PER_MINUTE', '-1'],
    ['LISTING_TTL_TIMED_SECONDS', '1.5'],
    // Below one create's most images (101): such a create could never be admitted.
    ['IMAGE_QUEUE_PER_PROVIDER', '100'],
  ]
  for (const [variable, value] of cases) {
    test(`${variable}=${value}: non-zero exit, one stderr line naming ${variable}`, async () => {
      const dir = tempDir()
      const file = join(dir, 'listings.db')
      const result = await run(process.execPath, [CLI, 'serve'], {
        cwd: dir,
        env: cleanEnv({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DATABASE_URL: `sqlite:${file}`, [variable]: value }),
        timeoutMs: 10_000,
      })
      assert.notEqual(result.code, 0)
      assert.notEqual(result.code, null, 'exited by itself')
      assert.doesNotMatch(result.stdout, /Server listening/)
      assert.equal(result.stdout, '', 'nothing on stdout')
      const lines = result.stderr.split('\n').filter((line) => line !== '')
      assert.equal(lines.length, 1, `one line on stderr:\n${result.stderr}`)
      assert.ok(result.stderr.endsWith('\n'))
      assert.match(lines[0] as string, new RegExp(`\\b${variable}\\b`))
      assert.ok(!existsSync(file), 'the database was not touched')
      assert.ok(!existsSync(join(dir, 'data')), 'no default database either')
      if (variable === 'DATABASE_URL') {
        assert.ok(!result.stderr.includes('hunter2secret'), 'the password is not echoed')
        assert.ok(!result.stderr.includes(value), 'the value is not echoed')
        assert.ok(!result.stderr.includes('mysql'), 'the value is not echoed')
      }
    })
  }
})

/** POSTs `body` in two halves, calling `between` after the first. Resolves with the status and body. */
function createInTwoHalves(server: ServerProcess, token: string, body: string, between: () => Promise<void>): Promise<{ status: number; body: any }> {
  const bytes = Buffer.from(body)
  const half = Math.floor(bytes.length / 2)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: server.port,
        method: 'POST',
        path: '/api/v1/listing/create',
        agent: false,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': bytes.length,
        },
      },
      (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (text += chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }))
        response.on('error', reject)
      },
    )
    req.on('error', reject)
    req.flushHeaders()
    req.write(bytes.subarray(0, half))
    between().then(
      () => req.end(bytes.subarray(half)),
      (error: unknown) => {
        req.destroy()
        reject(error)
      },
    )
  })
}

describe('SIGTERM drains', () => {
  test('an in-flight create completes with 201, new connections are refused, exit 0, the listing is kept', async () => {
    const database = await createTestDatabase('sqlite')
    try {
      const server = await startServer({ DATABASE_URL: database.url })
      const token = server.printedTokens()[0] as string
      assert.match(token, TOKEN_SHAPE)
      const body = listingBody()

      let signalledAt = 0
      const created = await createInTwoHalves(server, token, JSON.stringify(body), async () => {
        await sleep(200) // the server has the headers and half the body
        server.child.kill('SIGTERM')
        signalledAt = Date.now()
        await sleep(200) // it is draining now
      })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      assert.equal(created.body.success, true)

      assert.equal(await tryConnect(server.port), 'ECONNREFUSED', 'no new connection after SIGTERM')

      let timer: NodeJS.Timeout | undefined
      const exit = await Promise.race([server.closed, new Promise((resolve) => (timer = setTimeout(() => resolve('still running after 10 s'), 10_000)))])
      clearTimeout(timer)
      assert.deepEqual(exit, { code: 0, signal: null })
      assert.ok(Date.now() - signalledAt < 10_000)
      assert.ok(
        server.logLines().some((line) => line.msg === 'request' && line.status === 201),
        'the drained request was logged',
      )

      const restarted = await startServer({ DATABASE_URL: database.url })
      try {
        const list = await get(restarted, '/api/v1/listing', { authorization: `Bearer ${token}` })
        assert.equal(list.status, 200)
        assert.equal(list.body.recordCount, 1)
        assert.equal(list.body.content[0].id, created.body.listingId)
        assert.equal(list.body.content[0].referenceId, body.referenceId)
      } finally {
        await restarted.stop('SIGKILL')
      }
    } finally {
      await killAll()
      await database.drop()
    }
  })
})
