import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import http from 'node:http'
import { test } from 'node:test'
import { sql } from 'kysely'
import { listingBody } from './fixtures.js'
import { describeEachDialect, type Response, type TestProvider, type TestService } from './helper.js'
import { assertProblem, countListings, postChunked } from './http-support.js'

// docs/api.md#authentication: every /api/v1/* request needs `Authorization: Bearer <token>`; missing, malformed, unknown or
// revoked → 401 with `WWW-Authenticate: Bearer` and a problem body, before any other work is done.

const CREATE = '/api/v1/listing/create'
const LIST = '/api/v1/listing'
/** docs/api.md#authentication: a revoked token is refused within 5 s on every instance (valid tokens may be cached until then). */
const REVOCATION_BOUND_MS = 5000
const ONE_MIB = 1024 * 1024

/** A token of the right shape (`lst_` + 43 base64url characters) that was never issued. */
const unknownToken = () => `lst_${randomBytes(32).toString('base64url')}`

/** Sends `authorization` exactly as given (none when undefined), instead of the helper's `Bearer <token>`. */
function withAuthorization(authorization: string | undefined, headers: Record<string, string> = {}) {
  return authorization === undefined ? headers : { ...headers, authorization }
}

function assertUnauthorized(response: Response): void {
  assertProblem(response, 401, 'unauthorized')
  const challenge = response.headers.get('www-authenticate')
  assert.match(challenge ?? '', /^Bearer(\s|$)/, `WWW-Authenticate is ${challenge}`)
}

interface BadCredential {
  name: string
  /** The Authorization header to send, given a freshly issued provider (undefined: no header at all). */
  header(provider: TestProvider, service: TestService): Promise<string | undefined> | string | undefined
}

const badCredentials: BadCredential[] = [
  { name: 'no Authorization header', header: () => undefined },
  { name: 'an empty Authorization header', header: () => '' },
  { name: 'Basic xyz', header: () => 'Basic xyz' },
  { name: 'Basic with a valid token', header: (p) => `Basic ${p.token}` },
  { name: 'Token scheme with a valid token', header: (p) => `Token ${p.token}` },
  { name: 'a valid token without a scheme', header: (p) => p.token },
  { name: '"Bearer" alone', header: () => 'Bearer' },
  { name: 'Bearer abc (malformed)', header: () => 'Bearer abc' },
  { name: 'a well-formed but unknown token', header: () => `Bearer ${unknownToken()}` },
  { name: 'a token with the wrong prefix (tok_)', header: (p) => `Bearer tok_${p.token.slice(4)}` },
  { name: 'a token with an upper-case prefix (LST_)', header: (p) => `Bearer LST_${p.token.slice(4)}` },
  { name: 'a token without its prefix', header: (p) => `Bearer ${p.token.slice(4)}` },
  { name: 'a token with one character more', header: (p) => `Bearer ${p.token}A` },
  { name: 'a token with one character less', header: (p) => `Bearer ${p.token.slice(0, -1)}` },
  { name: 'a token with two schemes', header: (p) => `Bearer Bearer ${p.token}` },
  { name: 'two tokens', header: (p) => `Bearer ${p.token} ${p.token}` },
  {
    name: 'a revoked token (5 s after revocation)',
    async header(p, service) {
      assert.equal(await service.providers.revokeToken(p.tokenId, Date.now()), true)
      service.clock.now += REVOCATION_BOUND_MS
      return `Bearer ${p.token}`
    },
  },
]

await describeEachDialect('authentication', (service) => {
  for (const credential of badCredentials) {
    test(`GET /api/v1/listing with ${credential.name} → 401`, async () => {
      const provider = await service.newProvider()
      assert.equal((await service.create(provider.token, listingBody())).status, 201)
      const header = await credential.header(provider, service)
      const response = await service.request('GET', LIST, { headers: withAuthorization(header) })
      assertUnauthorized(response)
      assert.equal(response.body.content, undefined, 'no listing is returned')
      assert.ok(!response.text.includes(provider.token.slice(4)), 'the token is not echoed')
    })

    test(`POST /api/v1/listing/create with ${credential.name} → 401, nothing stored`, async () => {
      const provider = await service.newProvider()
      const header = await credential.header(provider, service)
      const before = await countListings(service)
      const response = await service.request('POST', CREATE, {
        json: listingBody(),
        headers: withAuthorization(header),
      })
      assertUnauthorized(response)
      assert.ok(!response.text.includes(provider.token.slice(4)), 'the token is not echoed')
      assert.equal(await countListings(service), before)
    })
  }

  test('the token in the query string instead of the header → 401', async () => {
    const provider = await service.newProvider()
    assertUnauthorized(await service.request('GET', `${LIST}?access_token=${provider.token}`))
  })

  test('a missing credential gets the bare challenge, a bad one says invalid_token (RFC 6750 §3)', async () => {
    const missing = await service.request('GET', LIST)
    assertUnauthorized(missing)
    assert.doesNotMatch(missing.headers.get('www-authenticate') ?? '', /error=/)
    const bad = await service.request('GET', LIST, { token: unknownToken() })
    assertUnauthorized(bad)
    assert.match(bad.headers.get('www-authenticate') ?? '', /error="invalid_token"/)
  })

  // Authentication happens before any other work: a request without a usable token is refused before its body
  // is looked at, so none of these get the 400/413/415 their body would otherwise earn.
  const unreadBodies: { name: string; send(service: TestService, authorization?: string): Promise<Response> }[] = [
    {
      name: 'invalid JSON',
      send: (s, a) => s.request('POST', CREATE, { raw: '{"a":', headers: withAuthorization(a, { 'content-type': 'application/json' }) }),
    },
    {
      name: 'an invalid listing',
      send: (s, a) => s.request('POST', CREATE, { json: { referenceId: 42 }, headers: withAuthorization(a) }),
    },
    {
      name: 'Content-Type text/plain',
      send: (s, a) =>
        s.request('POST', CREATE, {
          raw: JSON.stringify(listingBody()),
          headers: withAuthorization(a, { 'content-type': 'text/plain' }),
        }),
    },
    {
      name: 'a body over 1 MiB with Content-Length',
      send: (s, a) =>
        s.request('POST', CREATE, {
          raw: JSON.stringify(listingBody()) + ' '.repeat(ONE_MIB),
          headers: withAuthorization(a, { 'content-type': 'application/json' }),
        }),
    },
    {
      name: 'a body over 1 MiB sent chunked',
      send: (s, a) =>
        postChunked(s.baseUrl, CREATE, {
          prefix: JSON.stringify(listingBody()),
          total: 2 * ONE_MIB,
          headers: withAuthorization(a, { 'content-type': 'application/json' }),
        }),
    },
  ]
  for (const body of unreadBodies) {
    test(`without a token, a POST with ${body.name} → 401 (not 400/413/415), nothing stored`, async () => {
      const before = await countListings(service)
      assertUnauthorized(await body.send(service))
      assert.equal(await countListings(service), before)
    })

    test(`with an unknown token, a POST with ${body.name} → 401, nothing stored`, async () => {
      const before = await countListings(service)
      assertUnauthorized(await body.send(service, `Bearer ${unknownToken()}`))
      assert.equal(await countListings(service), before)
    })
  }

  const unknownPaths: [method: string, path: string][] = [
    ['GET', '/api/v1/nope'],
    ['POST', '/api/v1/nope'],
    ['GET', '/api/v1/'],
    ['GET', '/api/v1'],
    ['GET', '/api/v1/listing/extra'],
  ]
  // A path some route has with other methods: 405 with Allow (still only once authenticated).
  const wrongMethods: [method: string, path: string, allow: string][] = [
    ['GET', '/api/v1/listing/create', 'POST'],
    ['DELETE', '/api/v1/listing', 'GET, HEAD'],
    ['OPTIONS', '/api/v1/listing', 'GET, HEAD'],
  ]
  for (const [method, path, allow] of [...unknownPaths.map(([m, p]) => [m, p, undefined] as const), ...wrongMethods]) {
    const answer = allow === undefined ? '404 problem' : `405 with Allow: ${allow}`
    test(`${method} ${path}: 401 without a token, ${answer} with one`, async () => {
      assertUnauthorized(await service.request(method, path))
      assertUnauthorized(await service.request(method, path, { token: unknownToken() }))
      const provider = await service.newProvider()
      const found = await service.request(method, path, { token: provider.token })
      if (allow === undefined) {
        assertProblem(found, 404, 'not-found')
      } else {
        assertProblem(found, 405, 'method-not-allowed')
        assert.equal(found.headers.get('allow'), allow)
      }
      assert.equal(found.headers.get('www-authenticate'), null)
    })
  }

  test('HEAD /api/v1/listing needs a token too', async () => {
    const refused = await service.request('HEAD', LIST)
    assert.equal(refused.status, 401)
    assert.match(refused.headers.get('www-authenticate') ?? '', /^Bearer/)
    const provider = await service.newProvider()
    assert.equal((await service.request('HEAD', LIST, { token: provider.token })).status, 200)
  })

  for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
    test(`the scheme is case-insensitive: "${scheme} <token>" works on GET and POST`, async () => {
      const provider = await service.newProvider()
      const headers = { authorization: `${scheme} ${provider.token}` }
      const created = await service.request('POST', CREATE, { json: listingBody(), headers })
      assert.equal(created.status, 201, created.text)
      const listed = await service.request('GET', LIST, { headers })
      assert.equal(listed.status, 200, listed.text)
      assert.equal(listed.body.recordCount, 1)
    })
  }

  test('a provider may hold several tokens; each works and sees the same listings', async () => {
    const provider = await service.newProvider()
    const second = await service.providers.createToken(provider.id, Date.now())
    assert.equal(second.providerId, provider.id)
    assert.notEqual(second.token, provider.token)
    assert.notEqual(second.id, provider.tokenId)

    const created = await service.create(provider.token, listingBody())
    assert.equal(created.status, 201, created.text)
    const viaSecond = await service.create(second.token, listingBody())
    assert.equal(viaSecond.status, 201, viaSecond.text)

    for (const token of [provider.token, second.token]) {
      const listed = await service.list(token)
      assert.equal(listed.status, 200, listed.text)
      assert.equal(listed.body.recordCount, 2)
      assert.deepEqual(listed.body.content.map((listing: { id: string }) => listing.id).sort(), [created.body.listingId, viaSecond.body.listingId].sort())
    }
  })

  test("a revoked token is refused within 5 s, and the provider's other token keeps working", async () => {
    const provider = await service.newProvider()
    const second = await service.providers.createToken(provider.id, Date.now())
    assert.equal((await service.list(provider.token)).status, 200)
    assert.equal((await service.list(second.token)).status, 200)

    assert.equal(await service.providers.revokeToken(provider.tokenId, Date.now()), true)
    service.clock.now += REVOCATION_BOUND_MS

    assertUnauthorized(await service.list(provider.token))
    const before = await countListings(service, provider.id)
    assertUnauthorized(await service.create(provider.token, listingBody()))
    assert.equal(await countListings(service, provider.id), before)

    const stillWorks = await service.create(second.token, listingBody())
    assert.equal(stillWorks.status, 201, stillWorks.text)
    const listed = await service.list(second.token)
    assert.equal(listed.status, 200, listed.text)
    assert.equal(listed.body.recordCount, 1)

    // Revoking twice keeps it revoked; revoking the second leaves the provider with no working token.
    assert.equal(await service.providers.revokeToken(provider.tokenId, Date.now()), true)
    assertUnauthorized(await service.list(provider.token))
    assert.equal(await service.providers.revokeToken(second.id, Date.now()), true)
    service.clock.now += REVOCATION_BOUND_MS
    assertUnauthorized(await service.list(second.token))
  })

  test("revoking one provider's token does not touch another provider's", async () => {
    const a = await service.newProvider()
    const b = await service.newProvider()
    assert.equal((await service.list(a.token)).status, 200)
    assert.equal(await service.providers.revokeToken(a.tokenId, Date.now()), true)
    service.clock.now += REVOCATION_BOUND_MS
    assertUnauthorized(await service.list(a.token))
    assert.equal((await service.list(b.token)).status, 200)
  })

  test('a token issued after start-up works at once', async () => {
    const provider = await service.newProvider()
    const issued = await service.providers.createToken(provider.id, Date.now())
    assert.equal((await service.list(issued.token)).status, 200)
  })

  test('tokens are stored only as hashes: sha256 hex in token_hash, the plain token in no column of any table', async () => {
    const provider = await service.newProvider()
    const second = await service.providers.createToken(provider.id, Date.now())
    // A listing too, so that every table has a row written while the token was in use.
    assert.equal((await service.create(provider.token, listingBody())).status, 201)

    for (const token of [provider.token, second.token]) {
      assert.match(token, /^lst_[A-Za-z0-9_-]{43}$/)
    }
    const rows = await service.database.kysely
      .selectFrom('tokens')
      .selectAll()
      .where('provider_id', '=', provider.id)
      .orderBy('created_at_ms')
      .orderBy('id')
      .execute()
    assert.equal(rows.length, 2)
    const byId = new Map(rows.map((row) => [row.id, row]))
    for (const [id, token] of [
      [provider.tokenId, provider.token],
      [second.id, second.token],
    ] as const) {
      const row = byId.get(id)
      assert.ok(row, `token row ${id} exists`)
      assert.equal(row.token_hash, createHash('sha256').update(token).digest('hex'))
      assert.match(row.token_hash, /^[0-9a-f]{64}$/)
    }

    const secrets = [provider.token, second.token].flatMap((token) => [token, token.slice(4)])
    for (const table of ['providers', 'tokens', 'listings', 'events'] as const) {
      const all = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(service.database.kysely)
      assert.ok(all.rows.length > 0, `${table} has rows`)
      for (const row of all.rows) {
        for (const [column, value] of Object.entries(row)) {
          const text = Buffer.isBuffer(value) ? value.toString('latin1') : String(value)
          for (const secret of secrets) {
            assert.ok(!text.includes(secret), `${table}.${column} holds a plain token`)
          }
        }
      }
    }
  })

  test('/healthz and /readyz need no token (and ignore a bad one)', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const plain = await service.request('GET', path)
      assert.equal(plain.status, 200, `${path}: ${plain.text}`)
      assert.equal(plain.headers.get('www-authenticate'), null)
      const withJunk = await service.request('GET', path, { headers: { authorization: 'Basic xyz' } })
      assert.equal(withJunk.status, 200, `${path}: ${withJunk.text}`)
    }
  })

  test('a refused request does not make the server read its body: the connection is closed', async () => {
    // Regression: a 401 kept the connection alive, so the server read and discarded a body of any size from a
    // client it had already refused.
    const total = 256 * ONE_MIB
    const { status, connection, sent } = await new Promise<{ status: number; connection?: string; sent: number }>((resolve, reject) => {
      const request = http.request(new URL(CREATE, service.baseUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      })
      let sent = 0
      let answer: { status: number; connection?: string } | undefined
      request.on('response', (response) => {
        answer = { status: response.statusCode ?? 0, connection: response.headers.connection }
        response.resume()
      })
      request.on('error', () => {}) // the server closing mid-upload is the expected outcome
      request.on('close', () => (answer ? resolve({ ...answer, sent }) : reject(new Error('no answer'))))
      const chunk = Buffer.alloc(ONE_MIB, 0x20)
      const pump = () => {
        while (sent < total && !request.destroyed) {
          sent += chunk.length
          if (!request.write(chunk)) return void request.once('drain', pump)
        }
        request.end()
      }
      pump()
    })
    assert.equal(status, 401)
    assert.equal(connection, 'close')
    assert.ok(sent < total / 4, `the client managed to send ${sent / ONE_MIB} MiB before the server closed`)
  })
})
