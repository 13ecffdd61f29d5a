import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { pointerMisfit, serialize } from './fuzz-json.js'
import { countItems, countListings } from './http-support.js'
import {
  BODY_LIMIT,
  assertIsProblem,
  assertNoPollution,
  assertReadsBack,
  body,
  contentType,
  fuzzEachDialect,
  onlyLocalUrls,
  parsed,
  withFreshReference,
} from './fuzz-support.js'

// Fuzzing POST /api/v1/listing/create with random and mutated bodies and Content-Types: see fuzz-support.ts for what every answer must be.

await fuzzEachDialect('create', ({ service, runs, settings, post, get }) => {
  test(`create: ${runs} random and mutated bodies; never a 5xx, pointers resolve, only a 201 stores, exactly`, async () => {
    let created = 0
    let stored: [number, number] = [await countListings(service), await countItems(service)]
    await fc.assert(
      fc.asyncProperty(body, contentType, async (sent, type) => {
        const bytes = withFreshReference(sent.kind === 'tree' ? Buffer.from(serialize(sent.tree)) : sent.bytes)
        // Over the limit, the service never reads the body: there is nothing to parse or check.
        const view = bytes.length > BODY_LIMIT ? { ok: false as const } : parsed(bytes)
        fc.pre(!view.ok || onlyLocalUrls(view.value))
        // One millisecond per case: the newest listing is always the one just created (list order, docs/api.md#list-your-listings).
        service.clock.now += 1
        // Counted after each case; nothing else writes to this database meanwhile.
        const [listingsBefore, itemsBefore] = stored
        const response = await post(bytes, type)
        const [listingsAfter, itemsAfter] = (stored = [await countListings(service), await countItems(service)])
        const context = `${response.status} ${response.text.slice(0, 300)}`
        assertNoPollution()

        if (response.status === 201) {
          created += 1
          assert.ok(view.ok, `a body that is not JSON in UTF-8 was stored: ${context}`)
          await assertReadsBack(view.ok ? view.value : undefined, response.body, get)
          const items = (view as { value: { items: unknown[] } }).value.items.length
          assert.deepEqual([listingsAfter - listingsBefore, itemsAfter - itemsBefore], [1, items], context)
          return
        }
        assert.deepEqual([listingsAfter, itemsAfter], [listingsBefore, itemsBefore], `stored on ${context}`)
        if (response.status === 200) {
          assert.equal(response.body?.success, true, context)
          return
        }
        const problem = assertIsProblem(response)
        const isJsonType = /^application\/json\s*(;\s*charset=utf-8)?$/i.test(type)
        if (!isJsonType) {
          // No body and no Content-Type is a missing body (400), not a body of the wrong type; a body both too
          // large and of the wrong type may be refused for either.
          const refusals = ['/problems/unsupported-media-type', ...(bytes.length > BODY_LIMIT ? ['/problems/payload-too-large'] : [])]
          if (bytes.length > 0 || type !== '') assert.ok(refusals.includes(problem.type), context)
          return
        }
        if (bytes.length > BODY_LIMIT) {
          assert.equal(problem.type, '/problems/payload-too-large', context)
          return
        }
        assert.notEqual(problem.type, '/problems/payload-too-large', context)
        if (sent.kind === 'tree' && sent.mutations === 0) assert.fail(`a valid body was refused: ${context}`)
        if (!view.ok) {
          assert.equal(problem.type, '/problems/invalid-request', context)
          assert.deepEqual(
            problem.errors.map((error: { pointer: string }) => error.pointer),
            [''],
            `not JSON in UTF-8, so the pointer is "": ${context}`,
          )
          return
        }
        for (const error of problem.errors ?? []) {
          const misfit = pointerMisfit(error.pointer, view.value)
          assert.equal(misfit, undefined, `${misfit}: ${context}`)
        }
      }),
      settings,
    )
    // The generator must reach the store, or "only a 201 stores" proves nothing.
    if (runs >= 200) assert.ok(created >= runs / 20, `only ${created} of ${runs} cases created a listing`)
  })
})
