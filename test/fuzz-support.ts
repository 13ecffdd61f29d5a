import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { fixtureImages, item, listingBody } from './fixtures.js'
import { Members, pathsOf, keyAt, nodeAt, Raw, removeAt, serialize, toNode, updateAt, type Node, type Path } from './fuzz-json.js'
import { parseJsonOrUndefined, startService, testDialects, type Response, type TestProvider, type TestService } from './helper.js'
import { assertProblem } from './http-support.js'

/**
 * What the fuzz-*.test.ts files share: a client that sends bytes exactly as given, what may be sent, what every
 * answer must be, and the frame each file's property runs in (fuzzEachDialect).
 *
 * Property-based fuzzing of the API routes over real HTTP (one keep-alive connection) against a listening
 * service on a real database. Whatever is sent: never a 5xx; every non-2xx is a problem+json; a 400's pointers
 * point into the body that was sent (or at a missing member of it); nothing is stored unless the answer is 201,
 * and what a 201 stored reads back exactly; nothing reaches Object.prototype.
 *
 * FUZZ_RUNS sets the number of cases per property for SQLite (default 2000); PostgreSQL runs a quarter of them,
 * since everything before the insert is the same code on both. FUZZ_SEED replays a run (fast-check prints the
 * seed and the shrunk counterexample of any failure).
 */

export const RUNS = Number(process.env.FUZZ_RUNS ?? 2000)
export const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)
export const POSTGRES_SHARE = 0.25

export const CREATE = '/api/v1/listing/create'
export const LIST = '/api/v1/listing'
export const BODY_LIMIT = 1024 * 1024
export const PROBLEM_TYPES_BY_STATUS: Record<number, string[]> = {
  400: ['invalid-request', 'image-unavailable'],
  409: ['conflict'],
  413: ['payload-too-large', 'image-too-large'],
  415: ['unsupported-media-type', 'unsupported-image-format'],
}

// ---- a keep-alive client that sends bytes exactly as given -----------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })

/**
 * One request on the shared keep-alive connection. The answer counts even when the server answers before the
 * upload ends and then closes the connection (a body over the limit): the write then fails, the answer stands.
 */
export function send(baseUrl: string, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Response> {
  return new Promise((resolve, reject) => {
    const request = http.request(new URL(path, baseUrl), { method, headers, agent })
    let answered = false
    request.on('response', (response) => {
      answered = true
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        const fetchHeaders = new Headers()
        for (const [name, value] of Object.entries(response.headers)) {
          for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) fetchHeaders.append(name, one)
        }
        resolve({ status: response.statusCode ?? 0, headers: fetchHeaders, text, body: parseJsonOrUndefined(text) })
      })
      response.on('error', reject)
    })
    request.on('error', (error) => {
      if (!answered) reject(error)
    })
    request.end(body)
  })
}

// ---- what may be sent -------------------------------------------------------------------------------------------

export const rawNumbers = [
  '1e308',
  '-1e308',
  '9007199254740993',
  '-0',
  '0.30000000000000004',
  '1e-320',
  '5e-324',
  '1e999',
  '-1e999',
  '1E+2',
  '0.0',
  '-0.0',
  '100000000000000000000000000000',
  '1.0000000000000000000001',
  '1000000000.001',
  '0.001',
] as const

export const edgeStrings = [
  'NaN',
  'Infinity',
  '-Infinity',
  '1e999',
  '25',
  'true',
  'null',
  '',
  ' ',
  '\t\n\r',
  '\u0000',
  'a\u0000b',
  '\uD800',
  '\uDFFF',
  'x\uDBFFy',
  '\u200B',
  '\uFEFF',
  '\u202Eevil',
  '\u00A0',
  '\u3000',
  'e\u0301',
  '👍🏽',
  '\u{10FFFF}',
  '\uFFFF',
  'ﷺ',
  'a'.repeat(200),
  'a'.repeat(201),
  'a'.repeat(255),
  'a'.repeat(256),
  'a'.repeat(2049),
  '~/',
  '..',
  'javascript:alert(1)',
  'ftp://127.0.0.1/x.png',
  'http://',
  'http://user:pw@127.0.0.1/x.png',
  'http://127.0.0.1:1/x.png',
  fixtureImages.url('/tiny.pdf'),
  fixtureImages.url('/status/404'),
  fixtureImages.url('/tiny.jpg'),
  'timed',
  'priority_timed',
  'product',
  'tax',
  'vat',
  '__proto__',
  'constructor',
] as const

export const specialKeys = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '',
  '~',
  '/',
  '~1',
  '~0',
  'a/b',
  '~01',
  ' ',
  'items',
  'price',
  '\u0000',
  '\uD800',
  'ğ',
  '👍',
] as const

export const anyJson: fc.Arbitrary<Node> = fc.jsonValue({ maxDepth: 3 }).map(toNode)

/** Values that are wrong somewhere and right elsewhere: every type, edge numbers and strings, deep and wide. */
export const hostileValue: fc.Arbitrary<Node> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...rawNumbers).map((text) => new Raw(text)) },
  { weight: 6, arbitrary: fc.constantFrom(...edgeStrings) },
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 4, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 3, arbitrary: fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null)) },
  { weight: 4, arbitrary: anyJson },
  // Thousands of levels deep, as text: a recursive walker anywhere would overflow its stack.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 1000, max: 20_000 }), fc.boolean())
      .map(([depth, arrays]) => new Raw(arrays ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth))),
  },
  // 10,000 entries: of a valid item (over the body limit), or of small wrong things.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(JSON.stringify(item(0)), '{}', '0', 'null', '"x"'), fc.constantFrom(101, 10_000))
      .map(([entry, count]) => new Raw(`[${Array(count).fill(entry).join(',')}]`)),
  },
  // Long strings, from just under the body limit to ~10 MB.
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: BODY_LIMIT - 2000, max: 10 * BODY_LIMIT }), fc.constantFrom('x', 'é', '😀'))
      .map(([bytes, char]) => new Raw(JSON.stringify(char.repeat(Math.ceil(bytes / Buffer.byteLength(char)))))),
  },
)

/** Fixture images that pass and fail each image check (docs/api.md#images): only the failures' pointers are named. */
export const imageUrl = fc
  .constantFrom(
    ...['/tiny.png', '/tiny.jpg', '/tiny.gif', '/tiny.webp', '/redirect/2'],
    ...['/tiny.pdf', '/tiny.bmp', '/text/x.png', '/status/404', '/status/500', '/redirect/5', '/size/6000000'],
  )
  .map((path) => fixtureImages.url(path))

/** Values right for the field named by `key` (most of the time), so that many mutated bodies still create. */
export function plausibleValue(key: string | undefined): fc.Arbitrary<Node> {
  switch (key) {
    case 'ar':
    case 'en':
      return fc.oneof(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }), fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }))
    case 'referenceId':
      return fc.string({ unit: 'grapheme', minLength: 1, maxLength: 80 })
    case 'price':
      return fc.oneof(
        fc.integer({ min: 1000, max: 1_000_000_000_000 }).map((thousandths) => thousandths / 1000),
        fc.double({ min: 1, max: 1e9, noNaN: true }),
      )
    case 'quantity':
      return fc.integer({ min: 1, max: 1_000_000 })
    case 'latitude':
      return fc.double({ min: -90, max: 90, noNaN: true })
    case 'longitude':
      return fc.double({ min: -180, max: 180, noNaN: true })
    case 'discountRate':
      return fc.double({ min: 0.1, max: 1, noNaN: true })
    case 'urlSafeName':
      return fc.stringMatching(/^[A-Za-z0-9._~-]{1,100}$/)
    case 'type':
      return fc.constantFrom('timed', 'priority_timed')
    case 'category':
      return fc.constantFrom('service', 'product', 'tax')
    case 'subCategory':
      return fc.constantFrom('delivery', 'main_dish', 'side_dish', 'drink', 'vat')
    case 'isAssignedToDriver':
      return fc.boolean()
    case 'position':
      // A PATCH or a hold names items by position: the fuzzed listing has 3 (0–2); 3 and 4 name none.
      return fc.integer({ min: 0, max: 4 })
    case 'holdSeconds':
      return fc.integer({ min: 0, max: 4000 })
    case 'listingId':
      // The real id is the valid body's: here ids of the right shape that name nothing, and the edge strings.
      return fc.oneof(fc.stringMatching(/^[0-9A-Z]{26}$/), fc.constantFrom(...edgeStrings))
    case 'imageUrl':
      return imageUrl
    default:
      return hostileValue
  }
}

export type Mutation =
  | { kind: 'replace'; at: number; value: Node }
  | { kind: 'plausible'; at: number; seed: number }
  | { kind: 'remove'; at: number }
  | { kind: 'add'; at: number; key: string; value: Node }
  | { kind: 'image'; at: number; url: string }

export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: hostileValue }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('plausible' as const), at: fc.nat(), seed: fc.integer() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('image' as const), at: fc.nat(), url: imageUrl }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      at: fc.nat(),
      key: fc.oneof(fc.constantFrom(...specialKeys), fc.string({ maxLength: 10 })),
      value: fc.oneof(hostileValue, fc.constant(toNode({ polluted: 'yes', toString: 'x' }))),
    }),
  },
)

export function apply(root: Node, change: Mutation): Node {
  const paths = pathsOf(root)
  const path = paths[change.at % paths.length] as Path
  switch (change.kind) {
    case 'replace':
      return updateAt(root, path, () => change.value)
    case 'plausible': {
      // The value is drawn from the field's own generator, seeded from the case, so a replay sends the same.
      const [value] = fc.sample(plausibleValue(keyAt(root, path)), { seed: change.seed, numRuns: 1 })
      return updateAt(root, path, () => value as Node)
    }
    case 'remove':
      return path.length === 0 ? root : removeAt(root, path)
    case 'image': {
      // The brand's image or an item's, present or not yet.
      const owners = paths.filter((candidate) => {
        const key = keyAt(root, candidate)
        return key === 'brand' || (candidate.length === 2 && keyAt(root, candidate.slice(0, 1)) === 'items')
      })
      if (owners.length === 0) return root
      const owner = owners[change.at % owners.length] as Path
      return updateAt(root, owner, (node) =>
        node instanceof Members ? new Members([...node.members.filter(([key]) => key !== 'imageUrl'), ['imageUrl', change.url]]) : node,
      )
    }
    case 'add': {
      const objects = paths.filter((candidate) => nodeAt(root, candidate) instanceof Members)
      if (objects.length === 0) return root
      const target = objects[change.at % objects.length] as Path
      return updateAt(root, target, (node) => new Members([...(node as Members).members, [change.key, change.value]]))
    }
  }
}

/** A valid body (1–3 items, some with images) and what was done to it. */
export const validBase = fc.record({ items: fc.integer({ min: 1, max: 3 }), itemImages: fc.boolean() }).map(({ items, itemImages }) => {
  const body = listingBody({ referenceId: REFERENCE_PLACEHOLDER }, items)
  if (itemImages) body.items[0].imageUrl = fixtureImages.url(`/tiny.jpg`)
  return toNode(body)
})

/**
 * Replaced by a fresh value of the same length in every request, so that a case sent again (fast-check replays
 * cases while shrinking) is not answered as a replay or a conflict of its earlier self.
 */
export const REFERENCE_PLACEHOLDER = 'fuzz-reference-placeholder-0000000'
let sentCount = 0

export function withFreshReference(bytes: Buffer): Buffer {
  const fresh = Buffer.from(`fuzz-${String((sentCount += 1)).padStart(REFERENCE_PLACEHOLDER.length - 5, '0')}`)
  const copy = Buffer.from(bytes)
  for (let at = copy.indexOf(REFERENCE_PLACEHOLDER); at >= 0; at = copy.indexOf(REFERENCE_PLACEHOLDER, at + 1)) fresh.copy(copy, at)
  return copy
}

export const invalidUtf8 = [[0xff], [0xc3, 0x28], [0xc0, 0xaf], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80]] as const

export type Body = { kind: 'tree'; tree: Node; mutations: number } | { kind: 'bytes'; bytes: Buffer }

export const body: fc.Arbitrary<Body> = fc.oneof(
  // The valid body as it is: must create.
  { weight: 1, arbitrary: validBase.map((tree) => ({ kind: 'tree' as const, tree, mutations: 0 })) },
  {
    weight: 12,
    arbitrary: fc.tuple(validBase, fc.array(mutation, { minLength: 1, maxLength: 4 })).map(([tree, changes]) => ({
      kind: 'tree' as const,
      tree: changes.reduce(apply, tree),
      mutations: changes.length,
    })),
  },
  // Not an object at all.
  { weight: 1, arbitrary: anyJson.map((tree) => ({ kind: 'tree' as const, tree, mutations: 1 })) },
  // A valid body cut short: not JSON.
  {
    weight: 1,
    arbitrary: fc.tuple(validBase, fc.nat()).map(([tree, at]) => {
      const text = Buffer.from(serialize(tree))
      return { kind: 'bytes' as const, bytes: text.subarray(0, at % text.length) }
    }),
  },
  // Bytes that are not UTF-8, inside a name or anywhere.
  {
    weight: 2,
    arbitrary: fc.tuple(validBase, fc.constantFrom(...invalidUtf8), fc.option(fc.nat(), { nil: undefined })).map(([tree, bad, at]) => {
      const text = Buffer.from(serialize(tree))
      const position = at === undefined ? text.indexOf('Morning Bakery') + 7 : at % (text.length + 1)
      return { kind: 'bytes' as const, bytes: Buffer.concat([text.subarray(0, position), Buffer.from(bad), text.subarray(position)]) }
    }),
  },
  // Anything at all, and the near-empty bodies.
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((bytes) => ({ kind: 'bytes' as const, bytes: Buffer.from(bytes) })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('', ' ', 'null', '{}', '[]', '"x"', '\uFEFF{}', '{"a":1,}', '{,}', "{'a':1}", '{"__proto__":{"polluted":1}}', '[1e999]')
      .map((text) => ({ kind: 'bytes' as const, bytes: Buffer.from(text) })),
  },
)

export const jsonTypes = ['application/json', 'application/json; charset=utf-8', 'Application/JSON;charset=UTF-8']
export const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constantFrom(...jsonTypes) },
  { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/json; charset=latin1', 'application/x-www-form-urlencoded', '') },
)

/** Discards any case that would make the service fetch from anywhere but this machine (none should, but never). */
export function onlyLocalUrls(document: unknown): boolean {
  // A loop, not recursion: documents nest thousands of levels deep.
  const pending = [document]
  while (pending.length > 0) {
    const node = pending.pop()
    if (typeof node === 'string' && URL.canParse(node)) {
      const { protocol, hostname } = new URL(node)
      if (['http:', 'https:'].includes(protocol) && hostname !== '127.0.0.1' && hostname !== '') return false
    } else if (node !== null && typeof node === 'object') {
      pending.push(...Object.values(node))
    }
  }
  return true
}

/** JSON.parse's view of the bytes, as the service decodes them; undefined when they are not JSON in UTF-8. */
export function parsed(bytes: Buffer): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)) }
  } catch {
    return { ok: false }
  }
}

// ---- PATCH bodies, If-Match and ids (docs/api.md#change-a-listing) --------------------------------------------

/** A valid PATCH of the fuzzed listing (3 items), mutated by the same mutations as create bodies. */
export const validPatch: fc.Arbitrary<Node> = fc
  .record({
    discountRate: fc.option(fc.constantFrom(0.1, 0.35, 0.5, 1), { nil: undefined }),
    items: fc.uniqueArray(
      fc.record({
        position: fc.integer({ min: 0, max: 2 }),
        quantity: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
        price: fc.option(fc.constantFrom(1, 7.5, 19.99, 1_000_000_000), { nil: undefined }),
      }),
      { selector: (entry) => entry.position, maxLength: 3 },
    ),
  })
  .map(({ discountRate, items }) => {
    const body: Record<string, unknown> = {}
    const changes = items
      .map(({ position, quantity, price }) => ({ position, ...(quantity === undefined ? {} : { quantity }), ...(price === undefined ? {} : { price }) }))
      .filter((entry) => Object.keys(entry).length > 1)
    // At least one change: the discount when no item entry changes anything.
    if (discountRate !== undefined || changes.length === 0) body.listingDetails = { discountRate: discountRate ?? 0.5 }
    if (changes.length > 0) body.items = changes
    return toNode(body)
  })

/** Bodies around a valid one: itself, mutated by one to three mutations, any JSON, and `raw` texts. */
export function bodiesAround(valid: fc.Arbitrary<Node>, validWeight: number, raw: string[]): fc.Arbitrary<Body> {
  return fc.oneof(
    { weight: validWeight, arbitrary: valid.map((tree) => ({ kind: 'tree' as const, tree, mutations: 0 })) },
    {
      weight: 8,
      arbitrary: fc.tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([tree, changes]) => ({
        kind: 'tree' as const,
        tree: changes.reduce(apply, tree),
        mutations: changes.length,
      })),
    },
    { weight: 1, arbitrary: anyJson.map((tree) => ({ kind: 'tree' as const, tree, mutations: 1 })) },
    { weight: 1, arbitrary: fc.constantFrom(...raw).map((text) => ({ kind: 'bytes' as const, bytes: Buffer.from(text) })) },
  )
}

export const patchBody = bodiesAround(validPatch, 3, [
  '',
  'null',
  '{}',
  '[]',
  '{"items":[]}',
  '{"items":[{"position":0}]}',
  '{"listingDetails":{}}',
  '{"__proto__":{"polluted":1}}',
])

// ---- webhook endpoint bodies (docs/api.md#webhooks) ----------------------------------------------------------------

/** A valid endpoint body; its URL names hosts only (never contacted: no worker runs in the fuzz service). */
export const validEndpoint: fc.Arbitrary<Node> = fc
  .record({
    url: fc.constantFrom('https://pos.example.com/hooks', 'http://hooks.example.net:8080/a?b=c', 'https://xn--mgbh0fb.example/ح'),
    events: fc.option(fc.uniqueArray(fc.constantFrom('listing.created', 'listing.updated', 'listing.withdrawn', 'listing.expired'), { minLength: 1 }), {
      nil: undefined,
    }),
  })
  .map(({ url, events }) => toNode(events === undefined ? { url } : { url, events }))

export const endpointBody = bodiesAround(validEndpoint, 2, [
  '',
  'null',
  '{}',
  '[]',
  '{"url":null}',
  '{"url":"http://127.0.0.1/"}',
  '{"url":"http://[::1]/"}',
  '{"__proto__":{"polluted":1}}',
])

export type IfMatchCase = { kind: 'none' } | { kind: 'current' } | { kind: 'stale' } | { kind: 'any' } | { kind: 'raw'; value: string }
export const ifMatch: fc.Arbitrary<IfMatchCase> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'none' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'current' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'stale' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'any' as const }) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(fc.stringMatching(/^[\x20-\x7E]{0,30}$/), fc.constantFrom('W/"1"', '"1', '1', '"1" "2"', ',', '*, "1"', 'W/', '""'))
      .map((value) => ({ kind: 'raw' as const, value })),
  },
)

/** The listing the fuzzed PATCH should leave, from the one before and the body a 200 accepted. */
export function patched(before: any, body: any): any {
  const expected = structuredClone(before)
  if (body.listingDetails?.discountRate !== undefined) expected.listingDetails.discountRate = body.listingDetails.discountRate
  for (const change of body.items ?? []) {
    // + 0: JSON's -0 is the quantity 0.
    if (change.quantity !== undefined) expected.items[change.position].quantity = (change.quantity as number) + 0
    if (change.price !== undefined) expected.items[change.position].price = change.price
  }
  const changed = JSON.stringify(expected) !== JSON.stringify(before)
  if (changed) expected.version = (before.version as number) + 1
  expected.status = expected.items.every((one: any) => one.quantity === 0) ? 'sold_out' : 'active'
  return { expected, changed }
}

/** Path segments of every shape, where a listing id goes. */
export const idSegment = fc.oneof(
  fc.stringMatching(/^[0-9A-Z]{26}$/),
  fc.stringMatching(/^[0-9A-Za-z]{0,40}$/),
  fc.string({ unit: 'grapheme', maxLength: 30 }).map(encodeURIComponent),
  fc.constantFrom('%00', '%E0%A4%A', '%', '.', '..', '%2F', 'create', 'by-reference', 'x'.repeat(5000), '9'.repeat(5000), '-1', '1e999'),
)

// ---- what every answer must be ---------------------------------------------------------------------------------

/** Any non-2xx: a problem of a type that belongs to its status (assertProblem checks the rest of docs/api.md#errors). */
export function assertIsProblem(response: Response): any {
  const context = `${response.status} ${response.text.slice(0, 300)}`
  assert.ok(response.status < 500, `a 5xx: ${context}`)
  const type = String(response.body?.type ?? '').replace(/^\/problems\//, '')
  assert.ok((PROBLEM_TYPES_BY_STATUS[response.status] ?? []).includes(type), `unexpected status or type: ${context}`)
  return assertProblem(response, response.status, type)
}

export const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort()

export function assertNoPollution(): void {
  assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeNames, 'Object.prototype changed')
  const empty: Record<string, unknown> = {}
  for (const key in empty) assert.fail(`({}) has an enumerable key ${key}`)
  assert.equal(empty.polluted, undefined)
}

// ---- the frame of each file's property -----------------------------------------------------------------------

export interface Fuzz {
  service: TestService
  provider: TestProvider
  runs: number
  settings: { numRuns: number; seed: number | undefined; includeErrorInReport: boolean }
  post: (bytes: Buffer, type: string) => Promise<Response>
  get: (path: string) => Promise<Response>
}

/**
 * `define`'s tests on each database, against one listening service with one provider; then a last test: nothing
 * reached Object.prototype, and valid requests still behave.
 */
export async function fuzzEachDialect(name: string, define: (fuzz: Fuzz) => void): Promise<void> {
  for (const dialect of await testDialects()) {
    const runs = dialect === 'sqlite' ? RUNS : Math.max(1, Math.round(RUNS * POSTGRES_SHARE))
    const settings = { numRuns: runs, seed: SEED, includeErrorInReport: true }

    describe(`fuzz ${name} [${dialect}]`, () => {
      const service = {} as TestService
      const provider = {} as TestProvider
      const post = (bytes: Buffer, type: string) =>
        send(
          service.baseUrl,
          'POST',
          CREATE,
          {
            authorization: `Bearer ${provider.token}`,
            ...(type === '' ? {} : { 'content-type': type }),
            'content-length': String(bytes.length),
          },
          bytes,
        )
      const get = (path: string) => send(service.baseUrl, 'GET', path, { authorization: `Bearer ${provider.token}` })

      before(async () => {
        Object.assign(service, await startService(dialect, { env: { RATE_LIMIT_PER_MINUTE: '0' } }))
        Object.assign(provider, await service.newProvider())
      })
      after(async () => {
        agent.destroy()
        await service.close()
      })

      define({ service, provider, runs, settings, post, get })

      test('afterwards: no key reached Object.prototype, and valid requests still behave', async () => {
        assertNoPollution()
        const body = listingBody()
        const response = await post(Buffer.from(JSON.stringify(body)), 'application/json')
        assert.equal(response.status, 201, response.text)
        const page = await get(`${LIST}?limit=1`)
        assert.equal(page.status, 200, page.text)
        assert.equal(page.body.content[0].referenceId, body.referenceId)
        const prototypeOfPage = Object.getPrototypeOf(page.body)
        assert.equal(prototypeOfPage, Object.prototype)
      })
    })
  }
}

/** A 201's listing, read back through the list route, is exactly what was sent (docs/api.md#create-a-listing, #list-your-listings). */
export async function assertReadsBack(sent: any, answer: any, get: (path: string) => Promise<Response>): Promise<void> {
  assert.equal(answer?.success, true)
  const page = await get(`${LIST}?limit=1`)
  assert.equal(page.status, 200, page.text)
  const [listing] = page.body.content
  assert.equal(listing?.id, answer.listingId, page.text)
  assert.deepEqual(
    { referenceId: listing.referenceId, items: listing.items, brand: { nameAr: listing.brand.nameAr, nameEn: listing.brand.nameEn } },
    {
      referenceId: sent.referenceId,
      items: sent.items.map((one: any) => ({
        nameAr: one.displayName.ar,
        nameEn: one.displayName.en,
        price: one.price,
        quantity: one.quantity ?? 1,
        category: one.category,
      })),
      brand: { nameAr: sent.brand.displayName.ar, nameEn: sent.brand.displayName.en },
    },
  )
}

// ---- query strings ----------------------------------------------------------------------------------------------

/**
 * A query string and what is known of it: `names` (decoded) when every name's decoding is certain, `valid` when
 * the contract decides the answer (true → 200, false → 400) and undefined when it does not.
 */
export interface Query {
  text: string
  names: string[] | undefined
  valid: boolean | undefined
}

export interface Pair {
  raw: string
  name: string | undefined
  value: { raw: string; ok: 'page' | 'limit' | 'both' | 'none' | 'unknown' }
}

export const name = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(['page', 'page'], ['limit', 'limit'], ['%70age', 'page'], ['l%69mit', 'limit']) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      ['PAGE', 'PAGE'],
      ['page[]', 'page[]'],
      ['page%20', 'page '],
      ['__proto__', '__proto__'],
      ['constructor', 'constructor'],
      ['hasOwnProperty', 'hasOwnProperty'],
      ['toString', 'toString'],
      ['offset', 'offset'],
      ['%00', '\u0000'],
      ['%C3%A9', 'é'],
    ),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^[a-z]{1,6}$/).map((text) => [text, text]) },
  { weight: 1, arbitrary: fc.constantFrom(['%ZZ', undefined], ['%', undefined], ['%E2%82', undefined], ['', undefined]) },
)

export const digits = (min: number, max: number) => fc.integer({ min, max }).map(String)
export const value = fc.oneof(
  { weight: 4, arbitrary: digits(1, 50).map((raw) => ({ raw, ok: 'both' as const })) },
  { weight: 2, arbitrary: digits(51, 100_000).map((raw) => ({ raw, ok: 'page' as const })) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        ['9007199254740991', 'page'],
        ['9007199254740992', 'none'],
        ['99999999999999999999', 'none'],
        ['1'.repeat(400), 'none'],
        ['007', 'both'],
        ['%31', 'both'],
        ['%35%30', 'both'],
        ['0', 'none'],
        ['-1', 'none'],
        ['-0', 'none'],
        ['51', 'page'],
        ['1.0', 'none'],
        ['1.5', 'none'],
        ['1e1', 'none'],
        ['0x10', 'none'],
        ['+1', 'none'],
        ['%2B1', 'none'],
        ['%201', 'none'],
        ['', 'none'],
        ['NaN', 'none'],
        ['Infinity', 'none'],
        ['true', 'none'],
        ['%EF%BC%91', 'none'],
        ['%D9%A3', 'none'],
        ['%00', 'none'],
        ['%ZZ', 'unknown'],
        ['%', 'unknown'],
        ['1%', 'unknown'],
      )
      .map(([raw, ok]) => ({ raw, ok })),
  },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9._~!$'()*,;:@/?-]{0,12}$/).map((raw) => ({ raw, ok: 'unknown' as const })) },
)

export const pair: fc.Arbitrary<Pair> = fc.tuple(name, value, fc.boolean()).map(([[rawName, decoded], v, withEquals]) => ({
  raw: withEquals || v.raw !== '' ? `${rawName}=${v.raw}` : rawName,
  name: decoded,
  value: v,
}))

export const queryString: fc.Arbitrary<Query> = fc
  .tuple(fc.array(pair, { maxLength: 5 }), fc.constantFrom('?', '?&', ''), fc.constantFrom('&', '&&'))
  .map(([pairs, start, separator]) => {
    const text = pairs.length === 0 ? start.replace('&', '') : `?${start.slice(1)}${pairs.map((p) => p.raw).join(separator)}`
    const nonEmpty = pairs.filter((p) => p.raw !== '')
    const names = nonEmpty.every((p) => p.name !== undefined) ? nonEmpty.map((p) => p.name as string) : undefined
    let valid: boolean | undefined = true
    if (names === undefined) valid = undefined
    else if (new Set(names).size < names.length) valid = false
    else {
      for (const p of nonEmpty) {
        if (p.name !== 'page' && p.name !== 'limit') valid = false
        else if (p.value.ok === 'unknown') valid = valid === false ? false : undefined
        else if (p.value.ok !== 'both' && p.value.ok !== p.name) valid = false
      }
    }
    return { text, names, valid }
  })

// ---- discovery's query strings (docs/api.md#discovery) ----------------------------------------------------------

/** A number as the API reads one in a query (JSON's notation); undefined when it is not one. */
export const numberIn = (text: string) => (/^-?\d{1,20}(\.\d{1,30})?([eE][+-]?\d{1,3})?$/.test(text) ? Number(text) : undefined)
export const within = (lo: number, hi: number) => (text: string) => {
  const n = numberIn(text)
  return n !== undefined && n >= lo && n <= hi
}

/**
 * A cursor of the right shape (payload, dot, signature) that the service did not issue: refused (naming cursor)
 * only when all else is valid, since only then is its signature checked.
 */
export const FOREIGN_CURSOR = `${Buffer.from(JSON.stringify({ q: 'AAAAAAAAAAAAAAAA', k: 12.5, id: '01M7YQ1WE0XK8J4Q2ZB5N6C7D8' })).toString('base64url')}.${'A'.repeat(22)}`

/** Whether a single value of each known parameter is valid (docs/api.md#discovery, #list-your-listings). */
export const discoverParameters: Record<string, (value: string) => boolean> = {
  latitude: within(-90, 90),
  longitude: within(-180, 180),
  radiusKm: (text) => within(0, 50)(text) && (numberIn(text) as number) > 0,
  minDiscountRate: within(0.1, 1),
  limit: (text) => /^-?\d{1,20}$/.test(text) && Number(text) >= 1 && Number(text) <= 50,
  sort: (text) => text === 'distance' || text === 'ending_soon',
  cursor: (text) => text === FOREIGN_CURSOR,
}

export const discoverValue = fc.oneof(
  { weight: 3, arbitrary: fc.double({ min: -400, max: 400, noNaN: true }).map(String) },
  { weight: 2, arbitrary: fc.double({ min: 0, max: 60, noNaN: true }).map((n) => n.toFixed(3)) },
  { weight: 2, arbitrary: fc.integer({ min: -5, max: 60 }).map(String) },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '',
      ' 1',
      '1.',
      '.5',
      '+1',
      '0x10',
      'NaN',
      'Infinity',
      '-Infinity',
      '-0',
      '1e999',
      '1E+2',
      '1e-7',
      '90',
      '-90',
      '90.0000001',
      '180',
      '-180',
      '-180.0001',
      '50',
      '50.0001',
      '0',
      '0.1',
      '0.09999',
      '1',
      '1.0',
      '007',
      'distance',
      'ending_soon',
      'DISTANCE',
      '\u0000',
      'abc',
      'é',
      FOREIGN_CURSOR,
      'eyJ9',
      FOREIGN_CURSOR.slice(0, -3),
      'x'.repeat(400),
      '[object Object]',
    ),
  },
)

export const discoverName = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...Object.keys(discoverParameters)) },
  { weight: 1, arbitrary: fc.constantFrom('page', 'lat', 'Latitude', 'radius', 'offset', '__proto__', 'constructor', 'toString') },
)

export interface DiscoverQueryCase {
  text: string
  /** The parameters a 400 must name, sorted; empty when the query is valid. */
  bad: string[]
  foreignCursor: boolean
}

export const discoverQuery: fc.Arbitrary<DiscoverQueryCase> = fc
  .tuple(fc.array(fc.tuple(discoverName, discoverValue), { maxLength: 9 }), fc.boolean(), fc.boolean(), fc.tuple(discoverValue, discoverValue))
  .map(([pairs, withLatitude, withLongitude, [latitude, longitude]]) => {
    // Most cases carry both required parameters, so that the others decide the answer.
    const all: Array<[string, string]> = [
      ...(withLatitude ? [['latitude', latitude] as [string, string]] : []),
      ...(withLongitude ? [['longitude', longitude] as [string, string]] : []),
      ...pairs,
    ]
    const counts = new Map<string, number>()
    for (const [name] of all) counts.set(name, (counts.get(name) ?? 0) + 1)
    const bad = new Set<string>()
    for (const [name, value] of all) {
      const valid = discoverParameters[name]
      if (!Object.hasOwn(discoverParameters, name) || (counts.get(name) as number) > 1 || !valid?.(value)) {
        if (!(name === 'cursor' && counts.get(name) === 1 && value === FOREIGN_CURSOR)) bad.add(name)
      }
    }
    for (const required of ['latitude', 'longitude']) if (!counts.has(required)) bad.add(required)
    const text = all.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&')
    const foreignCursor = all.some(([name, value]) => name === 'cursor' && value === FOREIGN_CURSOR)
    return { text, bad: [...bad].sort(), foreignCursor }
  })
