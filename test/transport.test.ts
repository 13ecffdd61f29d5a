import assert from 'node:assert/strict'
import http from 'node:http'
import { test } from 'node:test'
import zlib from 'node:zlib'
import { listingBody } from './fixtures.js'
import { describeEachDialect, type TestService } from './helper.js'
import { assertProblem } from './http-support.js'

// docs/api.md#compression and #conditional-requests: compression by Accept-Encoding, with Vary; ETag and If-None-Match → 304 on pages and listings.

interface Raw {
  status: number
  headers: http.IncomingHttpHeaders
  /** The bytes as sent, before any decoding. */
  bytes: Buffer
  /** The body decoded by its Content-Encoding. */
  text: string
}

/** A request whose answer is read as sent (fetch would decode it and hide what the server did). */
function rawGet(service: TestService, path: string, headers: Record<string, string>): Promise<Raw> {
  return new Promise((resolve, reject) => {
    http
      .get(new URL(path, service.baseUrl), { headers }, (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () => {
          const bytes = Buffer.concat(chunks)
          const encoding = response.headers['content-encoding']
          const decoded = encoding === 'br' ? zlib.brotliDecompressSync(bytes) : encoding === 'gzip' ? zlib.gunzipSync(bytes) : bytes
          resolve({ status: response.statusCode ?? 0, headers: response.headers, bytes, text: decoded.toString('utf8') })
        })
      })
      .on('error', reject)
  })
}

const auth = (token: string) => ({ authorization: `Bearer ${token}` })

await describeEachDialect('compression', (service) => {
  async function bigPage(): Promise<{ token: string; path: string }> {
    const provider = await service.newProvider()
    for (let i = 0; i < 3; i++) assert.equal((await service.create(provider.token, listingBody({}, 20))).status, 201)
    return { token: provider.token, path: '/api/v1/listing?limit=50' }
  }

  test('br or gzip as Accept-Encoding allows, the same JSON decoded, Vary: accept-encoding either way', async () => {
    const { token, path } = await bigPage()
    const plain = await rawGet(service, path, auth(token))
    assert.equal(plain.status, 200)
    assert.equal(plain.headers['content-encoding'], undefined)
    assert.ok(plain.bytes.length >= 1024)
    assert.match(String(plain.headers.vary), /accept-encoding/i)
    const cases: Array<[string, string | undefined]> = [
      ['br', 'br'],
      ['gzip', 'gzip'],
      ['gzip, deflate, br', 'br'],
      ['gzip;q=1, br;q=0.5', 'gzip'],
      ['br;q=0, gzip', 'gzip'],
      ['x-gzip', 'gzip'],
      ['*', 'gzip'],
      ['deflate', undefined],
      ['identity', undefined],
      ['br;q=0, gzip;q=0', undefined],
      ['', undefined],
    ]
    for (const [accepted, expected] of cases) {
      // Twice: the second answer of a shared page comes from its compressed copy.
      for (let i = 0; i < 2; i++) {
        const answer = await rawGet(service, path, { ...auth(token), 'accept-encoding': accepted })
        assert.equal(answer.status, 200)
        assert.equal(answer.headers['content-encoding'], expected, `Accept-Encoding: ${accepted}`)
        assert.match(String(answer.headers.vary), /accept-encoding/i)
        assert.equal(answer.text, plain.text, `Accept-Encoding: ${accepted}`)
        assert.equal(answer.headers.etag, plain.headers.etag)
        if (expected) assert.ok(answer.bytes.length < plain.bytes.length / 3, `${expected}: ${answer.bytes.length} of ${plain.bytes.length}`)
      }
    }
  })

  test('every kind of response of 1 KiB or more: one listing, the feed, a long problem, the document, /docs assets', async () => {
    const { token } = await bigPage()
    const id = (await service.create(token, listingBody({}, 20))).body.listingId
    const manyErrors = encodeURIComponent(JSON.stringify({}))
    const paths = [
      `/api/v1/listing/${id}`,
      '/api/v1/events',
      '/openapi.json',
      '/docs/static/swagger-ui-bundle.js',
      `/api/v1/listing?limit=0&page=0&x=${manyErrors}`,
    ]
    for (const path of paths) {
      const plain = await rawGet(service, path, auth(token))
      const compressed = await rawGet(service, path, { ...auth(token), 'accept-encoding': 'br' })
      assert.equal(compressed.headers['content-encoding'], plain.bytes.length >= 1024 ? 'br' : undefined, `${path}: ${plain.bytes.length} bytes`)
      assert.equal(compressed.text, plain.text, path)
    }
  })

  test('under 1 KiB: never compressed', async () => {
    const provider = await service.newProvider()
    const small = await rawGet(service, '/api/v1/listing', { ...auth(provider.token), 'accept-encoding': 'br, gzip' })
    assert.equal(small.status, 200)
    assert.ok(small.bytes.length < 1024)
    assert.equal(small.headers['content-encoding'], undefined)
    const refused = await rawGet(service, '/api/v1/listing', { 'accept-encoding': 'gzip' })
    assert.equal(refused.status, 401)
    assert.equal(refused.headers['content-encoding'], undefined)
  })
})

await describeEachDialect('conditional GET', (service) => {
  const list = (token: string, headers: Record<string, string> = {}) => service.request('GET', '/api/v1/listing', { token, headers })
  const one = (token: string, id: string, headers: Record<string, string> = {}) => service.request('GET', `/api/v1/listing/${id}`, { token, headers })

  test('a page: ETag; If-None-Match of it → 304 without a body until the page changes', async () => {
    const provider = await service.newProvider()
    await service.create(provider.token, listingBody({}, 2))
    const id = (await service.create(provider.token, listingBody({}, 2))).body.listingId
    const first = await list(provider.token)
    const etag = first.headers.get('etag') as string
    assert.match(etag, /^W\/"[A-Za-z0-9_-]+"$/)
    for (const condition of [etag, etag.slice(2), '*', `"other", ${etag}`]) {
      const again = await list(provider.token, { 'if-none-match': condition })
      assert.equal(again.status, 304, condition)
      assert.equal(again.text, '')
      assert.equal(again.headers.get('etag'), etag)
    }
    assert.equal((await list(provider.token, { 'if-none-match': '"other"' })).status, 200)
    // Another page of the same listings (here: only the newest of the two) has its own ETag.
    assert.notEqual((await service.request('GET', '/api/v1/listing?limit=1', { token: provider.token })).headers.get('etag'), etag)

    // A create, a change, the passing of time: each a new body and ETag.
    const afterChange: string[] = [etag]
    await service.create(provider.token, listingBody())
    afterChange.push((await list(provider.token, { 'if-none-match': afterChange.at(-1) as string })).headers.get('etag') as string)
    await service.request('PATCH', `/api/v1/listing/${id}`, { token: provider.token, json: { items: [{ position: 0, quantity: 5 }] } })
    afterChange.push((await list(provider.token, { 'if-none-match': afterChange.at(-1) as string })).headers.get('etag') as string)
    service.clock.now += service.config.LISTING_TTL_TIMED_SECONDS * 1000
    const expired = await list(provider.token, { 'if-none-match': afterChange.at(-1) as string })
    assert.equal(expired.status, 200)
    assert.ok(expired.body.content.every((listing: any) => listing.status === 'expired'))
    afterChange.push(expired.headers.get('etag') as string)
    assert.equal(new Set(afterChange).size, 4, afterChange.join(' '))
  })

  test('one listing: ETag "<version>"; If-None-Match of it → 304; a change or the expiry → 200 with the new one', async () => {
    const provider = await service.newProvider()
    const id = (await service.create(provider.token, listingBody({}, 1))).body.listingId
    assert.equal((await one(provider.token, id, { 'if-none-match': '"1"' })).status, 304)
    assert.equal((await one(provider.token, id, { 'if-none-match': 'W/"1"' })).status, 304)
    const byReference = await service.request('GET', `/api/v1/listing/by-reference/${encodeURIComponent((await one(provider.token, id)).body.referenceId)}`, {
      token: provider.token,
      headers: { 'if-none-match': '"1"' },
    })
    assert.equal(byReference.status, 304)
    await service.request('PATCH', `/api/v1/listing/${id}`, { token: provider.token, json: { items: [{ position: 0, quantity: 0 }] } })
    const changed = await one(provider.token, id, { 'if-none-match': '"1"' })
    assert.equal(changed.status, 200)
    assert.equal(changed.headers.get('etag'), '"2"')
    service.clock.now += service.config.LISTING_TTL_TIMED_SECONDS * 1000
    const expired = await one(provider.token, id, { 'if-none-match': '"2"' })
    assert.equal(expired.status, 200)
    assert.equal(expired.body.status, 'expired')
    assert.equal(expired.headers.get('etag'), '"3"')
    assert.equal((await one(provider.token, id, { 'if-none-match': '"3"' })).status, 304)
  })

  test('a malformed If-None-Match → 400 naming the header; 404 stays 404', async () => {
    const provider = await service.newProvider()
    const id = (await service.create(provider.token, listingBody())).body.listingId
    for (const garbage of ['1', 'W/', '"1', '"1" "2"']) {
      for (const response of [await list(provider.token, { 'if-none-match': garbage }), await one(provider.token, id, { 'if-none-match': garbage })]) {
        const problem = assertProblem(response, 400, 'invalid-request')
        assert.deepEqual(
          problem.errors.map((error: any) => error.header),
          ['If-None-Match'],
        )
      }
    }
    assertProblem(await one(provider.token, '0'.repeat(26), { 'if-none-match': '*' }), 404, 'not-found')
  })
})
