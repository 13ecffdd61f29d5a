import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { item, listingBody } from './fixtures.js'
import { pointerMisfit, serialize, toNode, type Node } from './fuzz-json.js'
import { assertProblem } from './http-support.js'
import {
  BODY_LIMIT,
  FOREIGN_CURSOR,
  REFERENCE_PLACEHOLDER,
  assertNoPollution,
  bodiesAround,
  contentType,
  fuzzEachDialect,
  idSegment,
  parsed,
  send,
  withFreshReference,
} from './fuzz-support.js'
import type { Response } from './helper.js'

// Fuzzing the reservation routes: hold bodies, the list's query strings, and ids in every path that names a
// reservation or a listing's stock. See fuzz-support.ts for what every answer must be.

/** Each status a refusal may have, with the problem types it may carry. */
const REFUSALS: Record<number, string[]> = {
  400: ['invalid-request'],
  404: ['not-found'],
  409: ['conflict', 'insufficient-stock'],
  413: ['payload-too-large'],
  415: ['unsupported-media-type'],
}

function assertRefusal(response: Response, context: string) {
  assert.ok(response.status < 500, `a 5xx: ${context}`)
  const type = String(response.body?.type ?? '').replace(/^\/problems\//, '')
  assert.ok((REFUSALS[response.status] ?? []).includes(type), `unexpected status or type: ${context}`)
  return assertProblem(response, response.status, type)
}

/** A valid hold of the fuzzed listing (3 items of 1,000 units), each position at most once. */
const validHold = (listingId: string): fc.Arbitrary<Node> =>
  fc
    .record({
      items: fc.uniqueArray(fc.record({ position: fc.integer({ min: 0, max: 2 }), quantity: fc.integer({ min: 1, max: 5 }) }), {
        selector: (line) => line.position,
        minLength: 1,
        maxLength: 3,
      }),
      holdSeconds: fc.option(fc.integer({ min: 30, max: 3600 }), { nil: undefined }),
    })
    .map(({ items, holdSeconds }) => toNode({ listingId, referenceId: REFERENCE_PLACEHOLDER, items, ...(holdSeconds === undefined ? {} : { holdSeconds }) }))

const STATUSES = ['held', 'confirmed', 'released', 'expired', 'cancelled']

/** A string's length as the schema counts it: in code points. */
const codePoints = (text: string) => Array.from(text).length
const lengthWithin = (min: number, max: number) => (text: string) => codePoints(text) >= min && codePoints(text) <= max

/** Whether a single value of each parameter of the list passes its schema (docs/api.md#reservations). */
const listParameters: Record<string, (value: string) => boolean> = {
  status: (text) => STATUSES.includes(text),
  // Text: no NUL.
  listingId: (text) => lengthWithin(1, 100)(text) && !text.includes('\u0000'),
  limit: (text) => /^-?\d{1,20}$/.test(text) && Number(text) >= 1 && Number(text) <= 100,
  // Of the right length, a cursor is then checked for its signature: the service issued none of these.
  cursor: lengthWithin(1, 300),
}

const listValue = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...STATUSES, 'HELD', 'held ', 'active') },
  { weight: 2, arbitrary: fc.integer({ min: -5, max: 120 }).map(String) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      ' 1',
      '1.0',
      '1e1',
      '007',
      '+1',
      '0x10',
      'NaN',
      '\u0000',
      'a\u0000b',
      'é',
      FOREIGN_CURSOR,
      'eyJ9',
      'x'.repeat(100),
      'x'.repeat(101),
      'x'.repeat(300),
      'x'.repeat(301),
      '[object Object]',
    ),
  },
)

const listName = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(...Object.keys(listParameters)) },
  { weight: 1, arbitrary: fc.constantFrom('page', 'Status', 'after', 'offset', '__proto__', 'constructor', 'toString') },
)

/** A query string of the list and the parameters a 400 must name (sorted; empty when it is valid). */
const listQuery = fc.array(fc.tuple(listName, listValue), { maxLength: 6 }).map((pairs) => {
  const counts = new Map<string, number>()
  for (const [name] of pairs) counts.set(name, (counts.get(name) ?? 0) + 1)
  const bad = new Set<string>()
  for (const [name, value] of pairs) {
    if (!Object.hasOwn(listParameters, name) || (counts.get(name) as number) > 1 || !listParameters[name]?.(value)) bad.add(name)
  }
  const text = pairs.map(([name, value]) => `${encodeURIComponent(name)}=${encodeURIComponent(value)}`).join('&')
  return { text, bad: [...bad].sort(), cursor: counts.has('cursor'), pairs }
})

await fuzzEachDialect('reservations', ({ service, provider, runs, settings }) => {
  const authorized = (token: string) => ({ authorization: `Bearer ${token}` })
  let marketplace = ''
  let listingId = ''
  const stock = async () => {
    const answer = await send(service.baseUrl, 'GET', `/api/v1/listing/${listingId}/stock`, authorized(provider.token))
    assert.equal(answer.status, 200, answer.text)
    return answer.body.items.map((entry: { held: number }) => entry.held) as number[]
  }

  test('set-up: a listing of 3 items of 1,000 units, and a marketplace', async () => {
    marketplace = (await service.newMarketplace('Fuzz Deals')).token
    const created = await service.create(provider.token, listingBody({ items: [0, 1, 2].map((k) => item(k, { quantity: 1000 })) }))
    assert.equal(created.status, 201, created.text)
    listingId = created.body.listingId
  })

  test(`hold: ${runs} random and mutated bodies; never a 5xx, pointers resolve, only a 201 holds, exactly what it names`, async () => {
    let held = 0
    const holdBody = bodiesAround(validHold(listingId), 3, [
      '',
      'null',
      '{}',
      '[]',
      '{"items":[]}',
      `{"listingId":"${listingId}"}`,
      '{"__proto__":{"polluted":1}}',
    ])
    await fc.assert(
      fc.asyncProperty(holdBody, contentType, async (sent, type) => {
        const bytes = withFreshReference(sent.kind === 'tree' ? Buffer.from(serialize(sent.tree)) : sent.bytes)
        const view = bytes.length > BODY_LIMIT ? { ok: false as const } : parsed(bytes)
        const headers: Record<string, string> = { ...authorized(marketplace), 'content-length': String(bytes.length) }
        if (type !== '') headers['content-type'] = type
        const response = await send(service.baseUrl, 'POST', '/api/v1/reservations', headers, bytes)
        const context = `${bytes.toString('utf8').slice(0, 200)} (${type}) → ${response.status} ${response.text.slice(0, 300)}`
        assertNoPollution()
        const sentBody: any = view.ok ? view.value : undefined
        if (response.status === 201) {
          held += 1
          const reservation = response.body
          // Released before anything is asserted, so that a failing case leaves no units held for the next.
          const heldNow = await stock()
          const released = await send(service.baseUrl, 'POST', `/api/v1/reservations/${reservation.id}/release`, authorized(marketplace))
          assert.equal(released.status, 200, released.text)
          assert.ok(view.ok, context)
          assert.deepEqual([reservation.status, reservation.listingId, reservation.referenceId], ['held', listingId, sentBody.referenceId], context)
          assert.deepEqual(
            reservation.items.map((line: { position: number; quantity: number }) => [line.position, line.quantity]),
            // + 0: JSON's -0 is the position 0.
            sentBody.items.map((line: { position: number; quantity: number }) => [line.position + 0, line.quantity]),
            context,
          )
          const expected = [0, 0, 0]
          for (const line of sentBody.items as Array<{ position: number; quantity: number }>)
            expected[line.position] = (expected[line.position] ?? 0) + line.quantity
          assert.deepEqual(heldNow, expected, context)
        } else if (response.status === 200) {
          // A referenceId an earlier case used, with the same body: that reservation as it is now (released).
          assert.ok(view.ok, context)
          assert.deepEqual([response.body.referenceId, response.body.status], [sentBody.referenceId, 'released'], context)
        } else {
          const problem = assertRefusal(response, context)
          if (view.ok) {
            for (const error of problem.errors ?? []) {
              const misfit = pointerMisfit(error.pointer, sentBody)
              assert.equal(misfit, undefined, `${misfit}: ${context}`)
            }
          }
          if (sent.kind === 'tree' && sent.mutations === 0 && /^application\/json$/.test(type)) assert.fail(`a valid hold was refused: ${context}`)
        }
        assert.deepEqual(await stock(), [0, 0, 0], `units stay held after ${context}`)
      }),
      settings,
    )
    if (runs >= 200) assert.ok(held >= runs / 20, `only ${held} of ${runs} cases held units`)
  })

  test(`list: ${runs} random query strings; 200 only for a valid one, and only what it asks for; a 400 names exactly the bad parameters`, async () => {
    // Reservations in several statuses to filter.
    for (const end of ['confirm', 'release', undefined]) {
      const made = await send(
        service.baseUrl,
        'POST',
        '/api/v1/reservations',
        { ...authorized(marketplace), 'content-type': 'application/json' },
        Buffer.from(JSON.stringify({ listingId, referenceId: `list-${String(end)}`, items: [{ position: 0, quantity: 1 }] })),
      )
      assert.equal(made.status, 201, made.text)
      if (end) assert.equal((await send(service.baseUrl, 'POST', `/api/v1/reservations/${made.body.id}/${end}`, authorized(marketplace))).status, 200)
    }
    await fc.assert(
      fc.asyncProperty(listQuery, fc.boolean(), async (query, asProvider) => {
        const token = asProvider ? provider.token : marketplace
        const response = await send(service.baseUrl, 'GET', `/api/v1/reservations?${query.text}`, authorized(token))
        const context = `${query.text.slice(0, 200)} → ${response.status} ${response.text.slice(0, 300)}`
        assertNoPollution()
        if (response.status === 200) {
          assert.deepEqual(query.bad, [], `a query with bad parameters was answered: ${context}`)
          assert.ok(!query.cursor, `a cursor the service never issued was followed: ${context}`)
          const asked = Object.fromEntries(query.pairs)
          const page: Array<{ status: string; listingId: string }> = response.body.data
          assert.ok(page.length <= Number(asked.limit ?? 50), context)
          for (const reservation of page) {
            if (asked.status !== undefined) assert.equal(reservation.status, asked.status, context)
            if (asked.listingId !== undefined) assert.equal(reservation.listingId, asked.listingId, context)
          }
          return
        }
        const problem = assertRefusal(response, context)
        assert.equal(response.status, 400, context)
        const named = [...new Set<string>(problem.errors.map((error: { parameter: string }) => error.parameter))].sort()
        assert.deepEqual(named, query.bad.length > 0 ? query.bad : ['cursor'], context)
      }),
      settings,
    )
  })

  test(`ids: ${runs} path segments of every shape where a reservation or a listing is named; a 404 or 400, never a 5xx, nothing changes`, async () => {
    // Another marketplace's reservation, named by its real id: as unknown as one that does not exist.
    const other = (await service.newMarketplace('Other Deals')).token
    const theirs = await send(
      service.baseUrl,
      'POST',
      '/api/v1/reservations',
      { ...authorized(other), 'content-type': 'application/json' },
      Buffer.from(JSON.stringify({ listingId, referenceId: 'theirs', items: [{ position: 1, quantity: 2 }] })),
    )
    assert.equal(theirs.status, 201, theirs.text)
    const before = await stock()
    // `.`, `..` and an empty segment change which route the path names: left to the listings' id fuzzing.
    const segment = fc.oneof(
      { weight: 4, arbitrary: idSegment.filter((text) => !['', '.', '..'].includes(text)) },
      { weight: 2, arbitrary: fc.stringMatching(/^rsv_[0-9A-Z]{26}$/) },
      { weight: 1, arbitrary: fc.constant(theirs.body.id as string) },
    )
    const route = fc.constantFrom('GET reservation', 'POST confirm', 'POST release', 'POST cancel', 'GET stock')
    await fc.assert(
      fc.asyncProperty(segment, route, async (id, which) => {
        const [method, action] = which.split(' ') as [string, string]
        const path =
          action === 'stock' ? `/api/v1/listing/${id}/stock` : action === 'reservation' ? `/api/v1/reservations/${id}` : `/api/v1/reservations/${id}/${action}`
        // The stock by its provider: a marketplace's token would be refused where `by-reference` turns the path into a provider's route.
        const response = await send(service.baseUrl, method, path, authorized(action === 'stock' ? provider.token : marketplace))
        const context = `${method} ${path.slice(0, 120)} → ${response.status} ${response.text.slice(0, 200)}`
        assert.ok([400, 404].includes(response.status), context)
        assertProblem(response, response.status, response.status === 404 ? 'not-found' : 'invalid-request')
      }),
      settings,
    )
    assert.deepEqual(await stock(), before)
    const read = await send(service.baseUrl, 'GET', `/api/v1/reservations/${theirs.body.id as string}`, authorized(other))
    assert.deepEqual([read.status, read.body.status, read.body.version], [200, 'held', 1])
  })
})
