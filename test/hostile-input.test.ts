import assert from 'node:assert/strict'
import http from 'node:http'
import { connect } from 'node:net'
import { gzipSync } from 'node:zlib'
import { after, before, describe, test } from 'node:test'
import { listingBody } from './fixtures.js'
import { createTestDatabase, parseJsonOrUndefined, testDialects, type Response, type TestDatabase } from './helper.js'
import { assertProblem } from './http-support.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'
import { MAX_BODY_DEPTH, TOO_DEEP, TOO_MANY_VALUES } from '../src/http/json-bounds.js'

/**
 * Issue 25's hostile inputs, against the service as a real process: header values built to make a parser
 * backtrack, JSON nested a million levels deep, bodies in a coding the service does not decode, and requests
 * with two Host headers. Each parser of client input must cost no more on its worst case than on a harmless
 * value of the same length; times are compared with each other, never with a fixed bound.
 */

after(killAll)

const MIB = 1024 * 1024
// Node refuses a request whose head is over 16 KiB; every attack value fits beside the other headers.
const LONG = 15_000
// How much slower than the harmless request of the same length the attack may be: generous for a noisy
// machine, far below what a backtracking parser costs at this length.
const RATIO = 10
const SAMPLES = 7

/** One keep-alive connection per test, so each timing is of a request, not of a TCP handshake. */
function client(server: ServerProcess) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  function request(method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<Response & { ms: number }> {
    const started = performance.now()
    return new Promise((resolve, reject) => {
      const req = http.request(`${server.baseUrl}${path}`, { method, agent, headers }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          const out = new Headers()
          for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') out.set(name, value)
          resolve({ status: res.statusCode ?? 0, headers: out, text, body: parseJsonOrUndefined(text), ms: performance.now() - started })
        })
      })
      req.on('error', reject)
      req.end(body)
    })
  }
  return { request, close: () => agent.destroy() }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

/** Sends bytes on a connection of its own and reads the first response. */
function rawRequest(server: ServerProcess, text: string | Buffer): Promise<Response> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1')
    let received = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => (received += chunk))
    socket.on('error', reject)
    socket.on('close', () => {
      const end = received.indexOf('\r\n\r\n')
      const [statusLine = '', ...lines] = received.slice(0, end).split('\r\n')
      const headers = new Headers()
      for (const line of lines) {
        const colon = line.indexOf(':')
        headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim())
      }
      let body = received.slice(end + 4)
      if (headers.get('transfer-encoding') === 'chunked') body = body.slice(body.indexOf('\r\n') + 2, body.lastIndexOf('\r\n0\r\n'))
      resolve({ status: Number(statusLine.split(' ')[1]), headers, text: body, body: parseJsonOrUndefined(body) })
    })
    socket.end(text)
  })
}

for (const dialect of await testDialects()) {
  describe(`hostile input (issue 25), against the service as a process, on ${dialect}`, { timeout: 120_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let token: string
    let listingId: string
    let http1: ReturnType<typeof client>

    before(async () => {
      database = await createTestDatabase(dialect)
      // The CLI's provider: a demo provider is made on SQLite only.
      const made = await runCli(['provider', 'create', '--name', 'hostile input'], { DATABASE_URL: database.url })
      assert.equal(made.code, 0, made.stderr)
      token = JSON.parse(made.stdout).token
      server = await startServer({ DATABASE_URL: database.url, RATE_LIMIT_PER_MINUTE: '0' })
      http1 = client(server)
      // Enough for the page to be over the compression threshold, so Accept-Encoding is negotiated.
      for (let i = 0; i < 3; i += 1) {
        const created = await http1.request(
          'POST',
          '/api/v1/listing/create',
          { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          JSON.stringify(listingBody({}, 3)),
        )
        assert.equal(created.status, 201, created.text)
        listingId = created.body.listingId
      }
    })
    after(async () => {
      http1?.close()
      await server?.stop('SIGKILL')
      await database?.drop()
    })

    const auth = () => ({ authorization: `Bearer ${token}` })

    /**
     * Median times of the attack and of a harmless request carrying as many bytes in a header nobody parses,
     * alternating, after one of each to warm up; the attack must cost at most RATIO times the harmless one.
     */
    async function assertLinear(
      what: string,
      attack: () => Promise<Response & { ms: number }>,
      harmless: () => Promise<Response & { ms: number }>,
      check: (response: Response) => void = () => {},
      ratioAtMost = RATIO,
    ) {
      const answers = [await attack()]
      await harmless()
      const harmlessMs: number[] = []
      for (let i = 0; i < SAMPLES; i += 1) {
        answers.push(await attack())
        harmlessMs.push((await harmless()).ms)
      }
      const attackMs = answers.slice(1).map((answer) => answer.ms)
      const ratio = median(attackMs) / median(harmlessMs)
      assert.ok(
        ratio <= ratioAtMost,
        `${what}: median ${median(attackMs).toFixed(1)} ms against ${median(harmlessMs).toFixed(1)} ms for a harmless request of the same size (${ratio.toFixed(1)}×)`,
      )
      // What the attack was answered: checked after its cost, so that a build that is both slow and wrong says slow.
      for (const answer of answers) check(answer)
    }

    const padding = (length: number) => ({ 'x-padding': 'p'.repeat(length) })

    test('If-None-Match "," + 15,000 spaces + "x" (a backtracking entity-tag parser) costs what a harmless header of that size costs', async () => {
      const value = `,${' '.repeat(LONG)}x`
      await assertLinear(
        'If-None-Match on a listing',
        () => http1.request('GET', `/api/v1/listing/${listingId}`, { ...auth(), 'if-none-match': value }),
        () => http1.request('GET', `/api/v1/listing/${listingId}`, { ...auth(), ...padding(value.length) }),
        (response) => assert.equal(assertProblem(response, 400, 'invalid-request').errors[0].header, 'If-None-Match'),
      )
      await assertLinear(
        'If-None-Match on a page',
        () => http1.request('GET', '/api/v1/listing', { ...auth(), 'if-none-match': value }),
        () => http1.request('GET', '/api/v1/listing', { ...auth(), ...padding(value.length) }),
        (response) => assert.equal(assertProblem(response, 400, 'invalid-request').errors[0].header, 'If-None-Match'),
      )
    })

    test('If-Match "," + 15,000 spaces + "x" on a PATCH costs what a harmless header of that size costs, and changes nothing', async () => {
      const value = `,${' '.repeat(LONG)}x`
      const patch = JSON.stringify({ listingDetails: { discountRate: 0.3 } })
      const json = { ...auth(), 'content-type': 'application/json' }
      await assertLinear(
        'If-Match',
        () => http1.request('PATCH', `/api/v1/listing/${listingId}`, { ...json, 'if-match': value }, patch),
        // The harmless request's precondition fails (412) so that it changes nothing either.
        () => http1.request('PATCH', `/api/v1/listing/${listingId}`, { ...json, 'if-match': '"999999"', ...padding(value.length) }, patch),
        (response) => assert.equal(assertProblem(response, 400, 'invalid-request').errors[0].header, 'If-Match'),
      )
    })

    test('an entity-tag list over the bound is refused naming the header; one within it is still understood', async () => {
      const current = await http1.request('GET', `/api/v1/listing/${listingId}`, auth())
      const etag = current.headers.get('etag') as string
      const within = `${'"0", '.repeat(100)}${etag}`
      assert.equal((await http1.request('GET', `/api/v1/listing/${listingId}`, { ...auth(), 'if-none-match': within })).status, 304)
      const over = `${'"0", '.repeat(1000)}${etag}`
      const refused = await http1.request('GET', `/api/v1/listing/${listingId}`, { ...auth(), 'if-none-match': over })
      const problem = assertProblem(refused, 400, 'invalid-request')
      assert.deepEqual(
        problem.errors.map((e: { header: string }) => e.header),
        ['If-None-Match'],
      )
      assert.match(problem.errors[0].detail, /at most \d+ characters/)
    })

    test('Accept-Encoding of 15 KB is not negotiated: the answer is identity-coded and costs what a harmless header of that size costs', async () => {
      const values = {
        'q-values': 'gzip;q=0.5,'.repeat(LONG / 11),
        'one token': 'x'.repeat(LONG),
        'no-preference': '*,'.repeat(LONG / 2),
      }
      for (const [name, value] of Object.entries(values)) {
        await assertLinear(
          `Accept-Encoding (${name})`,
          () => http1.request('GET', '/api/v1/listing', { ...auth(), 'accept-encoding': value }),
          () => http1.request('GET', '/api/v1/listing', { ...auth(), 'accept-encoding': 'gzip', ...padding(value.length) }),
          (response) => {
            assert.equal(response.status, 200, response.text)
            assert.equal(response.headers.get('content-encoding'), null)
          },
        )
      }
      const short = await http1.request('GET', '/api/v1/listing', { ...auth(), 'accept-encoding': 'gzip, deflate, br, zstd' })
      assert.equal(short.headers.get('content-encoding'), 'br', 'an ordinary Accept-Encoding is still negotiated')
    })

    test('Authorization "Bearer" + 15,000 spaces + "x y" costs what a harmless header of that size costs, and is 401', async () => {
      for (const value of [`Bearer${' '.repeat(LONG)}x y`, `Bearer x${' '.repeat(LONG)}y`, `Bearer ${' '.repeat(LONG)}${token}`]) {
        await assertLinear(
          'Authorization',
          () => http1.request('GET', '/api/v1/listing', { authorization: value }),
          () => http1.request('GET', '/api/v1/listing', { authorization: 'Bearer x', ...padding(value.length) }),
          (response) => assertProblem(response, 401, 'unauthorized'),
        )
      }
    })

    test('Content-Type with 15 KB of parameters (the charset regex) costs what a harmless header of that size costs, and is 415', async () => {
      const body = JSON.stringify(listingBody())
      const values = [
        `application/json;${' '.repeat(LONG)}x`,
        `application/json${'; charset'.repeat(LONG / 9)}`,
        `application/json${';a="'.repeat(LONG / 4)}`,
        `application/json; charset=${'"'.repeat(LONG)}`,
      ]
      for (const value of values) {
        await assertLinear(
          'Content-Type',
          () => http1.request('POST', '/api/v1/listing/create', { ...auth(), 'content-type': value }, body),
          () => http1.request('POST', '/api/v1/listing/create', { ...auth(), 'content-type': 'text/plain', ...padding(value.length) }, body),
          (response) => assert.equal(assertProblem(response, 415, 'unsupported-media-type').errors?.[0]?.header, 'Content-Type'),
        )
      }
      const utf8 = await http1.request('POST', '/api/v1/listing/create', { ...auth(), 'content-type': 'application/json; charset="UTF-8"' }, body)
      assert.equal(utf8.status, 201, utf8.text)
    })

    test('X-Request-Id of 15 KB costs what a harmless header of that size costs, and is replaced by a generated id', async () => {
      for (const value of ['a'.repeat(LONG), `${'a'.repeat(128)} ${'a'.repeat(LONG)}`]) {
        await assertLinear(
          'X-Request-Id',
          () => http1.request('GET', '/healthz', { 'x-request-id': value }),
          () => http1.request('GET', '/healthz', padding(value.length)),
          (response) => assert.notEqual(response.headers.get('x-request-id'), value),
        )
      }
    })

    test('a query string of 15 KB (thousands of repeated or unknown parameters) costs what a harmless header of that size costs', async () => {
      const queries = ['limit=1&'.repeat(LONG / 8), 'a&'.repeat(LONG / 2), `limit=${'1'.repeat(LONG)}`, `limit=1.${'0'.repeat(LONG)}e`]
      for (const query of queries) {
        await assertLinear(
          'query string',
          () => http1.request('GET', `/api/v1/listing?${query}`, auth()),
          () => http1.request('GET', '/api/v1/listing', { ...auth(), ...padding(query.length) }),
          (response) => assertProblem(response, 400, 'invalid-request'),
        )
      }
    })

    // Just under the 1 MiB limit, each.
    const size = MIB - 64
    // The harmless body: one long string. Refusing a body takes its reading only, the string its reading, decoding
    // and parsing too, so a refused body may cost at most twice the string (tighter than RATIO: parsing a deep or
    // crowded body costs fewer multiples of a string's parsing than a backtracking header parser costs).
    const plain = `"${'a'.repeat(size - 2)}"`
    const json = () => ({ ...auth(), 'content-type': 'application/json' })

    test(`a 1 MiB body of nested arrays is refused as it is read: 400 "${TOO_DEEP}", costing what a 1 MiB string costs`, async () => {
      const nested = `${'['.repeat(size / 2)}${']'.repeat(size / 2)}`
      const nestedObjects = `${'{"a":'.repeat(size / 6)}1${'}'.repeat(size / 6)}`
      for (const body of [nested, nestedObjects]) {
        await assertLinear(
          'nested JSON',
          () => http1.request('POST', '/api/v1/listing/create', json(), body),
          () => http1.request('POST', '/api/v1/listing/create', json(), plain),
          (response) => assert.deepEqual(assertProblem(response, 400, 'invalid-request').errors, [{ pointer: '', detail: TOO_DEEP }]),
          2,
        )
      }
      // A "[" inside a string is not nesting, and a body exactly as deep as the bound is parsed and validated.
      const inString = await http1.request('POST', '/api/v1/listing/create', json(), JSON.stringify({ ...listingBody(), referenceId: '['.repeat(200) }))
      assert.equal(inString.status, 201, inString.text)
      const atBound = `${'['.repeat(MAX_BODY_DEPTH)}${']'.repeat(MAX_BODY_DEPTH)}`
      const deepest = await http1.request('POST', '/api/v1/listing/create', json(), atBound)
      assert.deepEqual(assertProblem(deepest, 400, 'invalid-request').errors, [{ pointer: '', detail: 'must be an object' }])
      const past = await http1.request('POST', '/api/v1/listing/create', json(), `[${atBound}]`)
      assert.deepEqual(assertProblem(past, 400, 'invalid-request').errors, [{ pointer: '', detail: TOO_DEEP }])
    })

    test(`a flat 1 MiB body of 262,000 empty objects (JSON.parse's costliest flat input) is refused as it is read: 400 "${TOO_MANY_VALUES}", costing what a 1 MiB string costs`, async () => {
      const crowded = {
        'empty objects': `[${'{},'.repeat(size / 3 - 1)}{}]`,
        zeros: `[${'0,'.repeat(size / 2 - 1)}0]`,
        'an object of 100,000 members': `{${Array.from({ length: 100_000 }, (_, i) => `"k${i}":0`).join(',')}}`.slice(0, size),
      }
      for (const [name, body] of Object.entries(crowded)) {
        await assertLinear(
          `a flat body of ${name}`,
          () => http1.request('POST', '/api/v1/listing/create', json(), body),
          () => http1.request('POST', '/api/v1/listing/create', json(), plain),
          (response) => assert.deepEqual(assertProblem(response, 400, 'invalid-request').errors, [{ pointer: '', detail: TOO_MANY_VALUES }]),
          2,
        )
      }
      // A string of escapes is one value, parsed and validated; the largest create there is (100 items with every
      // field) is well within the bound and stored.
      const escapes = `"${'\\u0041'.repeat(size / 6 - 1)}"`
      const answered = await http1.request('POST', '/api/v1/listing/create', json(), escapes)
      assert.deepEqual(assertProblem(answered, 400, 'invalid-request').errors, [{ pointer: '', detail: 'must be an object' }])
      const largest = await http1.request('POST', '/api/v1/listing/create', json(), JSON.stringify(listingBody({}, 100)))
      assert.equal(largest.status, 201, largest.text)
    })

    test('a body labelled Content-Encoding: gzip is refused with 415 naming the header, and nothing is stored', async () => {
      const count = async () => (await http1.request('GET', '/api/v1/listing?limit=1', auth())).body.recordCount
      const before = await count()
      const plain = JSON.stringify(listingBody())
      const cases: Array<[string, Record<string, string>, string | Buffer]> = [
        ['gzip, body plain', { 'content-encoding': 'gzip' }, plain],
        ['gzip, body gzipped', { 'content-encoding': 'gzip' }, gzipSync(plain)],
        ['br', { 'content-encoding': 'br' }, plain],
        ['identity then gzip', { 'content-encoding': 'identity, gzip' }, plain],
        ['upper case', { 'content-encoding': 'GZIP' }, plain],
      ]
      for (const [name, headers, body] of cases) {
        const response = await http1.request('POST', '/api/v1/listing/create', { ...auth(), 'content-type': 'application/json', ...headers }, body)
        const problem = assertProblem(response, 415, 'unsupported-media-type')
        assert.equal(problem.errors?.[0]?.header, 'Content-Encoding', name)
      }
      const patched = await http1.request(
        'PATCH',
        `/api/v1/listing/${listingId}`,
        { ...auth(), 'content-type': 'application/json', 'content-encoding': 'deflate' },
        JSON.stringify({ listingDetails: { discountRate: 0.2 } }),
      )
      assertProblem(patched, 415, 'unsupported-media-type')
      // A transfer coding other than chunked is the same body the service cannot read as sent.
      const chunked = await rawRequest(
        server,
        `POST /api/v1/listing/create HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
          `Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n${Buffer.byteLength(plain).toString(16)}\r\n${plain}\r\n0\r\n\r\n`,
      )
      assert.equal(assertProblem(chunked, 415, 'unsupported-media-type').errors?.[0]?.header, 'Transfer-Encoding')
      assert.equal(await count(), before, 'a coded body was stored')
      const identity = await http1.request(
        'POST',
        '/api/v1/listing/create',
        { ...auth(), 'content-type': 'application/json', 'content-encoding': 'identity' },
        plain,
      )
      assert.equal(identity.status, 201, identity.text)
    })

    test('two Host headers, a Host that is not a host, or none on HTTP/1.1 → 400 naming Host (RFC 9112 §3.2)', async () => {
      const refused = [
        'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n',
        'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nhost: 127.0.0.1\r\nConnection: close\r\n\r\n',
        `GET /api/v1/listing HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${token}\r\nHOST: b\r\nConnection: close\r\n\r\n`,
        'GET /healthz HTTP/1.1\r\nHost: a b\r\nConnection: close\r\n\r\n',
        'GET /healthz HTTP/1.1\r\nHost: a/b\r\nConnection: close\r\n\r\n',
        `GET /healthz HTTP/1.1\r\nHost: ${'a'.repeat(LONG)}\r\nConnection: close\r\n\r\n`,
        'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n',
      ]
      for (const request of refused) {
        const response = await rawRequest(server, request)
        const problem = assertProblem(response, 400, 'invalid-request')
        assert.equal(problem.errors?.[0]?.header, 'Host', request)
      }
      const accepted = [
        'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nConnection: close\r\n\r\n',
        'GET /healthz HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n',
        'GET /healthz HTTP/1.1\r\nHost: api.example.com\r\nConnection: close\r\n\r\n',
        'GET /healthz HTTP/1.0\r\n\r\n',
      ]
      for (const request of accepted) assert.equal((await rawRequest(server, request)).status, 200, request)
    })
  })
}
