import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sql } from 'kysely'
import { listingBody } from './fixtures.js'
import { describeEachDialect, type Response, type TestService } from './helper.js'
import { MAX_BODY_DEPTH, TOO_DEEP } from '../src/http/json-bounds.js'
import { assertProblem, countItems, countListings, pointersOf, postChunked, postStream, REQUEST_ID_SHAPE } from './http-support.js'

// Contract §4 (every error is an RFC 9457 problem; X-Request-Id; a 500 says nothing of internals) and the parsing
// step of docs/api.md#create-a-listing (400 invalid JSON, 415 non-JSON Content-Type, 413 body over 1 MiB).

const CREATE = '/api/v1/listing/create'
const ONE_MIB = 1024 * 1024
const JSON_TYPE = { 'content-type': 'application/json' }

/** POSTs `raw` to the create route exactly as given, with a valid token. */
function postRaw(service: TestService, token: string, raw: string | Uint8Array, headers: Record<string, string> = JSON_TYPE) {
  return service.request('POST', CREATE, { token, raw, headers })
}

/** A valid listing body as JSON text, padded with trailing whitespace (still valid JSON) to exactly `bytes`. */
function paddedBody(bytes: number): string {
  const json = JSON.stringify(listingBody())
  assert.ok(Buffer.byteLength(json) <= bytes)
  return json + ' '.repeat(bytes - Buffer.byteLength(json))
}

/** Asserts a 400 invalid-request whose errors[] point at `pointer`; returns the body. */
function assertInvalid(response: Response, pointer: string): any {
  const body = assertProblem(response, 400, 'invalid-request')
  assert.ok(Array.isArray(body.errors) && body.errors.length > 0, response.text)
  assert.equal(body.errors[0].pointer, pointer, response.text)
  return body
}

await describeEachDialect('HTTP errors and parsing', (service) => {
  // ---- 405: a path asked with a method it does not have ---------------------------------------------------------

  for (const [method, path, allow] of [
    ['GET', '/api/v1/listing/create', 'POST'],
    ['DELETE', '/api/v1/listing/01M7YQ1WE0000000ZDW4J8XG3M', 'GET, HEAD, PATCH'],
    ['PUT', '/api/v1/events', 'GET, HEAD'],
    ['POST', '/openapi.json', 'GET, HEAD'],
  ] as const) {
    test(`${method} ${path} → 405 with Allow: ${allow}`, async () => {
      const token = path.startsWith('/api/') ? (await service.newProvider()).token : undefined
      const response = await service.request(method, path, { token })
      assertProblem(response, 405, 'method-not-allowed')
      assert.equal(response.headers.get('allow'), allow)
    })
  }

  test('a path no route has stays 404', async () => {
    assertProblem(await service.request('GET', '/api/v1/nothing-here', { token: (await service.newProvider()).token }), 404, 'not-found')
  })

  // ---- 415: the request's Content-Type --------------------------------------------------------------------------

  for (const contentType of ['text/plain', 'text/plain; charset=utf-8', 'application/x-www-form-urlencoded', 'application/jsonx']) {
    test(`Content-Type ${contentType} with a JSON body → 415, nothing stored`, async () => {
      const provider = await service.newProvider()
      const response = await postRaw(service, provider.token, JSON.stringify(listingBody()), { 'content-type': contentType })
      assertProblem(response, 415, 'unsupported-media-type')
      assert.equal(await countListings(service, provider.id), 0)
    })
  }

  test('no Content-Type with a body → 415', async () => {
    const provider = await service.newProvider()
    // A Uint8Array body makes fetch send no Content-Type at all (a string would get text/plain).
    const response = await postRaw(service, provider.token, new TextEncoder().encode(JSON.stringify(listingBody())), {})
    assert.equal(response.headers.get('content-type')?.startsWith('application/problem+json'), true)
    assertProblem(response, 415, 'unsupported-media-type')
    assert.equal(await countListings(service, provider.id), 0)
  })

  test('Content-Type application/json; charset=utf-8 is accepted → 201', async () => {
    const provider = await service.newProvider()
    const response = await postRaw(service, provider.token, JSON.stringify(listingBody()), {
      'content-type': 'application/json; charset=utf-8',
    })
    assert.equal(response.status, 201, response.text)
    assert.equal(response.body.success, true)
  })

  for (const contentType of ['application/json; charset=UTF-8', 'application/json; charset="utf-8"', 'application/json;charset=utf8']) {
    test(`Content-Type ${contentType} is accepted → 201`, async () => {
      const provider = await service.newProvider()
      const response = await postRaw(service, provider.token, JSON.stringify(listingBody()), { 'content-type': contentType })
      assert.equal(response.status, 201, response.text)
    })
  }

  for (const contentType of ['application/json; charset=latin1', 'application/json; charset=utf-16', 'application/json; charset="iso-8859-1"']) {
    test(`Content-Type ${contentType} (JSON must be UTF-8) → 415, nothing stored`, async () => {
      const provider = await service.newProvider()
      const response = await postRaw(service, provider.token, JSON.stringify(listingBody()), { 'content-type': contentType })
      assertProblem(response, 415, 'unsupported-media-type')
      assert.equal(await countListings(service, provider.id), 0)
    })
  }

  // ---- 413: body over 1 MiB -------------------------------------------------------------------------------------

  test('a body of exactly 1 MiB is read (201); one byte more is 413', async () => {
    const provider = await service.newProvider()
    const exact = await postRaw(service, provider.token, paddedBody(ONE_MIB))
    assert.equal(exact.status, 201, exact.text)
    const over = await postRaw(service, provider.token, paddedBody(ONE_MIB + 1))
    assertProblem(over, 413, 'payload-too-large')
    assert.equal(await countListings(service, provider.id), 1)
  })

  test('a body over 1 MiB with Content-Length → 413, nothing stored', async () => {
    const provider = await service.newProvider()
    const response = await postRaw(service, provider.token, paddedBody(3 * ONE_MIB))
    assertProblem(response, 413, 'payload-too-large')
    assert.equal(await countListings(service, provider.id), 0)
  })

  test('a body over 1 MiB sent chunked (http.request, no Content-Length) → 413, nothing stored', async () => {
    const provider = await service.newProvider()
    const response = await postChunked(service.baseUrl, CREATE, {
      prefix: JSON.stringify(listingBody()),
      total: 2 * ONE_MIB,
      headers: { ...JSON_TYPE, authorization: `Bearer ${provider.token}` },
    })
    assertProblem(response, 413, 'payload-too-large')
    assert.equal(await countListings(service, provider.id), 0)
  })

  test('a body over 1 MiB sent as a ReadableStream (chunked) → 413', async () => {
    const provider = await service.newProvider()
    const response = await postStream(service.baseUrl, CREATE, {
      total: ONE_MIB + 1,
      headers: { ...JSON_TYPE, authorization: `Bearer ${provider.token}` },
    })
    assertProblem(response, 413, 'payload-too-large')
    assert.equal(await countListings(service, provider.id), 0)
  })

  // ---- 400: not JSON, or not a JSON object ----------------------------------------------------------------------

  const notJson: [name: string, raw: string][] = [
    ['truncated', '{"a":'],
    ['single quotes', "{'a':1}"],
    ['trailing garbage', '{"a":1}garbage'],
    ['two values', '{"a":1} {"b":2}'],
    ['a trailing comma', '{"a":1,}'],
    ['an empty body', ''],
    ['only whitespace', '   \n  '],
    ['a byte-order mark', '\uFEFF{}'],
    ['NaN', '{"a":NaN}'],
  ]
  for (const [name, raw] of notJson) {
    test(`invalid JSON (${name}) → 400 with pointer ""`, async () => {
      const provider = await service.newProvider()
      assertInvalid(await postRaw(service, provider.token, raw), '')
      assert.equal(await countListings(service, provider.id), 0)
    })
  }

  for (const raw of ['[]', '"x"', '42', 'null', 'true', '[{}]']) {
    test(`JSON that is not an object (${raw}) → 400 with pointer ""`, async () => {
      const provider = await service.newProvider()
      const body = assertInvalid(await postRaw(service, provider.token, raw), '')
      assert.equal(body.errors.length, 1, JSON.stringify(body))
    })
  }

  test('a POST with no body and no Content-Type → 400 with pointer ""', async () => {
    const provider = await service.newProvider()
    assertInvalid(await service.request('POST', CREATE, { token: provider.token }), '')
  })

  const deep: [name: string, make: () => string, pointer: string][] = [
    [
      '10,000 nested arrays as referenceId',
      () => JSON.stringify(listingBody({ referenceId: 'DEEP' })).replace('"DEEP"', '['.repeat(10_000) + ']'.repeat(10_000)),
      '',
    ],
    [
      '500,000 nested arrays as referenceId (as deep as 1 MiB allows)',
      () => JSON.stringify(listingBody({ referenceId: 'DEEP' })).replace('"DEEP"', '['.repeat(500_000) + ']'.repeat(500_000)),
      '',
    ],
    [
      '100,000 nested objects as brand.displayName.en',
      () => {
        const body = listingBody()
        body.brand.displayName.en = 'DEEP'
        return JSON.stringify(body).replace('"DEEP"', `${'{"x":'.repeat(100_000)}1${'}'.repeat(100_000)}`)
      },
      '',
    ],
    [
      '100,000 nested objects under an unknown field',
      () => JSON.stringify(listingBody()).replace(/^\{/, `{"extra":${'{"x":'.repeat(100_000)}1${'}'.repeat(100_000)},`),
      '',
    ],
  ]
  // Refused before parsing, as a whole (json-bounds.ts): no field is named, the body is.
  for (const [name, make, pointer] of deep) {
    test(`deeply nested JSON (${name}) → 400 "nests deeper than ${MAX_BODY_DEPTH} levels", not 500`, async () => {
      const provider = await service.newProvider()
      const raw = make()
      assert.ok(Buffer.byteLength(raw) <= ONE_MIB, `${Buffer.byteLength(raw)} bytes`)
      const body = assertInvalid(await postRaw(service, provider.token, raw), pointer)
      assert.deepEqual(body.errors, [{ pointer, detail: TOO_DEEP }])
      // The service is still answering.
      assert.equal((await service.create(provider.token, listingBody())).status, 201)
    })
  }

  // ---- prototype pollution --------------------------------------------------------------------------------------

  test('__proto__, constructor and prototype keys (root and brand) → 400 naming each; nothing is polluted', async () => {
    const provider = await service.newProvider()
    const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort()
    // Written as text: an object literal's __proto__ would set a prototype, not a key.
    const raw = JSON.stringify(listingBody())
      .replace(
        /^\{/,
        '{"__proto__":{"polluted":"root __proto__","isAdmin":true},' +
          '"constructor":{"prototype":{"polluted":"root constructor.prototype"}},' +
          '"prototype":{"polluted":"root prototype"},',
      )
      .replace(
        '"brand":{',
        '"brand":{"__proto__":{"polluted":"brand __proto__"},' +
          '"constructor":{"prototype":{"polluted":"brand constructor.prototype"}},' +
          '"prototype":{"polluted":"brand prototype"},',
      )
    const response = await postRaw(service, provider.token, raw)
    const body = assertProblem(response, 400, 'invalid-request')
    const pointers = pointersOf(body)
    for (const pointer of ['/__proto__', '/constructor', '/prototype', '/brand/__proto__', '/brand/constructor', '/brand/prototype']) {
      assert.ok(pointers.includes(pointer), `${pointer} not in ${JSON.stringify(pointers)}`)
    }
    assert.equal(({} as any).polluted, undefined)
    assert.equal(({} as any).isAdmin, undefined)
    assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeKeys)
    assert.equal(await countListings(service, provider.id), 0)
  })

  for (const pointer of [
    '/__proto__',
    '/constructor',
    '/prototype',
    '/brand/__proto__',
    '/brand/constructor',
    '/brand/prototype',
    '/items/0/__proto__',
    '/location/constructor',
    '/listingDetails/prototype',
  ]) {
    test(`a lone ${pointer} key → 400 naming ${pointer}; nothing is polluted`, async () => {
      const provider = await service.newProvider()
      const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort()
      const [parent, key] = [pointer.slice(0, pointer.lastIndexOf('/')), pointer.slice(pointer.lastIndexOf('/') + 1)]
      // In an item, one level less: a body nesting deeper than any schema allows is refused before its keys are read.
      const injected = parent === '/items/0' ? `"${key}":{"polluted":"yes"},` : `"${key}":{"polluted":"yes","prototype":{"polluted":"yes"}},`
      const json = JSON.stringify(listingBody())
      let raw: string
      if (parent === '') raw = json.replace(/^\{/, `{${injected}`)
      else if (parent === '/items/0') raw = json.replace('"items":[{', `"items":[{${injected}`)
      else raw = json.replace(`"${parent.slice(1)}":{`, `"${parent.slice(1)}":{${injected}`)
      assert.notEqual(raw, json)
      const body = assertProblem(await postRaw(service, provider.token, raw), 400, 'invalid-request')
      assert.deepEqual(pointersOf(body), [pointer])
      assert.equal(({} as any).polluted, undefined)
      assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeKeys)
    })
  }

  // ---- 404 ------------------------------------------------------------------------------------------------------

  for (const [method, path] of [
    ['GET', '/nope'],
    ['POST', '/nope'],
    ['GET', '/api/v2/listing'],
    ['GET', '/api/v1/nope'],
  ] as const) {
    test(`unknown route ${method} ${path} (with a token) → 404 problem`, async () => {
      const provider = await service.newProvider()
      assertProblem(await service.request(method, path, { token: provider.token }), 404, 'not-found')
    })
  }

  // ---- X-Request-Id ---------------------------------------------------------------------------------------------

  /** One request per status the contract names; `headers` is added to each. */
  async function oneOfEach(headers: Record<string, string>): Promise<[status: number, response: Response][]> {
    const provider = await service.newProvider()
    const auth = { ...headers, authorization: `Bearer ${provider.token}` }
    return [
      [200, await service.request('GET', '/api/v1/listing', { headers: auth })],
      [201, await service.request('POST', CREATE, { json: listingBody(), headers: auth })],
      [400, await service.request('POST', CREATE, { raw: '{"a":', headers: { ...auth, ...JSON_TYPE } })],
      [401, await service.request('GET', '/api/v1/listing', { headers })],
      [404, await service.request('GET', '/nope', { headers: auth })],
      [415, await service.request('POST', CREATE, { raw: '{}', headers: { ...auth, 'content-type': 'text/plain' } })],
      [413, await service.request('POST', CREATE, { raw: paddedBody(ONE_MIB + 1), headers: { ...auth, ...JSON_TYPE } })],
      [413, await postChunked(service.baseUrl, CREATE, { total: 2 * ONE_MIB, headers: { ...auth, ...JSON_TYPE } })],
      [200, await service.request('GET', '/healthz', { headers })],
    ]
  }

  test('X-Request-Id absent → a generated one on every response (200, 201, 400, 401, 404, 415, 413)', async () => {
    const seen = new Set<string>()
    for (const [status, response] of await oneOfEach({})) {
      assert.equal(response.status, status, response.text)
      const id = response.headers.get('x-request-id')
      assert.ok(id !== null && REQUEST_ID_SHAPE.test(id), `${status}: X-Request-Id is ${id}`)
      seen.add(id)
    }
    assert.equal(seen.size, 9, 'each request gets its own id')
  })

  for (const [name, id] of [
    ['abc-123', 'abc-123'],
    ['128 characters', 'r'.repeat(120) + '-1234567'],
    ['every visible ASCII character', Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join('')],
  ] as const) {
    test(`a valid X-Request-Id (${name}) is echoed on every response (200, 201, 400, 401, 404, 415, 413)`, async () => {
      assert.ok(id.length <= 128)
      for (const [status, response] of await oneOfEach({ 'x-request-id': id })) {
        assert.equal(response.status, status, response.text)
        assert.equal(response.headers.get('x-request-id'), id, `on the ${status}`)
      }
    })
  }

  for (const [name, id] of [
    ['129 characters', 'r'.repeat(129)],
    ['a space inside', 'abc 123'],
    ['a tab inside', 'abc\t123'],
    ['non-ASCII (é, as Latin-1)', 'abc-é'],
    ['non-ASCII (日本, as UTF-8 bytes)', Buffer.from('abc-日本', 'utf8').toString('latin1')],
    ['empty', ''],
  ] as const) {
    test(`an invalid X-Request-Id (${name}) is replaced by a generated one on every response`, async () => {
      for (const [status, response] of await oneOfEach({ 'x-request-id': id })) {
        assert.equal(response.status, status, response.text)
        const sent = response.headers.get('x-request-id')
        assert.ok(sent !== null && REQUEST_ID_SHAPE.test(sent), `${status}: X-Request-Id is ${JSON.stringify(sent)}`)
        assert.notEqual(sent, id.trim())
      }
    })
  }

  // ---- 500 ------------------------------------------------------------------------------------------------------

  async function installFailingTrigger(): Promise<void> {
    const db = service.database.kysely
    if (service.dialect === 'sqlite') {
      await sql`create trigger fail_events before insert on events begin select raise(abort, 'boom /secret/path'); end`.execute(db)
    } else {
      await sql`create or replace function fail_events() returns trigger language plpgsql as $$ begin raise exception 'boom /secret/path'; end $$`.execute(db)
      await sql`create trigger fail_events before insert on events for each row execute function fail_events()`.execute(db)
    }
  }

  async function dropFailingTrigger(): Promise<void> {
    const db = service.database.kysely
    if (service.dialect === 'sqlite') {
      await sql`drop trigger if exists fail_events`.execute(db)
    } else {
      await sql`drop trigger if exists fail_events on events`.execute(db)
      await sql`drop function if exists fail_events()`.execute(db)
    }
  }

  test('a 500 says nothing of internals, stores nothing and reserves nothing', async () => {
    const provider = await service.newProvider()
    const body = listingBody({}, 3)
    const listingsBefore = await countListings(service)
    const itemsBefore = await countItems(service)
    await installFailingTrigger()
    try {
      const failed = await service.request('POST', CREATE, {
        token: provider.token,
        json: body,
        headers: { 'x-request-id': 'quote-me-500' },
      })
      assertProblem(failed, 500, 'internal')
      assert.equal(failed.headers.get('x-request-id'), 'quote-me-500')
      const text = failed.text.toLowerCase()
      for (const leak of ['boom', 'secret', 'fail_events', 'insert', 'trigger', 'at ', '.ts', '.js', 'sql', 'stack']) {
        assert.ok(!text.includes(leak), `the 500 body mentions "${leak}": ${failed.text}`)
      }
      for (const [name, value] of failed.headers) {
        assert.ok(!/boom|secret/i.test(value), `header ${name} leaks: ${value}`)
      }

      // Nothing was stored: not the listing, not an item, not the provider's count.
      const listed = await service.list(provider.token)
      assert.equal(listed.status, 200, listed.text)
      assert.equal(listed.body.recordCount, 0)
      assert.deepEqual(listed.body.content, [])
      assert.equal(await countListings(service), listingsBefore)
      assert.equal(await countItems(service), itemsBefore)

      // Still failing while the trigger is there: the first attempt left nothing that a retry could replay.
      assertProblem(await service.create(provider.token, body), 500, 'internal')
    } finally {
      await dropFailingTrigger()
    }

    // The failed request reserved nothing: the same referenceId (and body) is now created, as new.
    const created = await service.create(provider.token, body)
    assert.equal(created.status, 201, created.text)
    const listed = await service.list(provider.token)
    assert.equal(listed.body.recordCount, 1)
    assert.equal(listed.body.content[0].referenceId, body.referenceId)
    assert.equal(listed.body.content[0].items.length, 3)
    assert.equal(await countItems(service), itemsBefore + 3)
  })

  test('after the 500 test, creates work again (the trigger is gone)', async () => {
    const provider = await service.newProvider()
    assert.equal((await service.create(provider.token, listingBody())).status, 201)
  })
})
