import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { listingBody } from './fixtures.js'
import { pointerMisfit, serialize } from './fuzz-json.js'
import { assertProblem } from './http-support.js'
import { BODY_LIMIT, assertNoPollution, contentType, fuzzEachDialect, ifMatch, parsed, patchBody, patched, send } from './fuzz-support.js'

// Fuzzing PATCH /api/v1/listing/{id} with random and mutated bodies and If-Match: see fuzz-support.ts for what every answer must be.

await fuzzEachDialect('patch', ({ service, provider, runs, settings, get }) => {
  test(`patch: ${runs} random and mutated bodies with If-Match; never a 5xx, nothing changes but on a 200, exactly`, async () => {
    const target = await service.create(provider.token, listingBody({}, 3))
    assert.equal(target.status, 201, target.text)
    const path = `/api/v1/listing/${target.body.listingId}`
    const read = async () => {
      const response = await get(path)
      assert.equal(response.status, 200, response.text)
      return response.body
    }
    let current = await read()
    let applied = 0
    await fc.assert(
      fc.asyncProperty(patchBody, contentType, ifMatch, async (sent, type, condition) => {
        const bytes = sent.kind === 'tree' ? Buffer.from(serialize(sent.tree)) : sent.bytes
        const view = bytes.length > BODY_LIMIT ? { ok: false as const } : parsed(bytes)
        service.clock.now += 1
        const headers: Record<string, string> = {
          authorization: `Bearer ${provider.token}`,
          ...(type === '' ? {} : { 'content-type': type }),
          'content-length': String(bytes.length),
        }
        const tag = { none: undefined, current: `"${current.version}"`, stale: `"${current.version - 1}"`, any: '*', raw: undefined }[condition.kind]
        if (tag !== undefined) headers['if-match'] = tag
        if (condition.kind === 'raw') headers['if-match'] = condition.value
        const before = current
        const response = await send(service.baseUrl, 'PATCH', path, headers, bytes)
        const context = `${condition.kind} ${headers['if-match'] ?? ''} → ${response.status} ${response.text.slice(0, 300)}`
        assertNoPollution()
        current = await read()
        if (response.status === 200) {
          applied += 1
          assert.ok(view.ok, context)
          assert.notEqual(condition.kind, 'stale', context)
          const { expected, changed } = patched(before, view.ok ? view.value : undefined)
          assert.equal(response.headers.get('etag'), `"${expected.version}"`, context)
          assert.deepEqual({ ...response.body, updatedAt: undefined }, { ...expected, updatedAt: undefined }, context)
          assert.equal(response.body.updatedAt, changed ? new Date(service.clock.now).toISOString() : before.updatedAt, context)
          assert.deepEqual(current, response.body, context)
          return
        }
        assert.deepEqual(current, before, `changed on ${context}`)
        assert.ok(response.status < 500, `a 5xx: ${context}`)
        const types: Record<number, string[]> = {
          400: ['invalid-request'],
          412: ['precondition-failed'],
          413: ['payload-too-large'],
          415: ['unsupported-media-type'],
        }
        const problemType = String(response.body?.type ?? '').replace(/^\/problems\//, '')
        assert.ok((types[response.status] ?? []).includes(problemType), `unexpected: ${context}`)
        const problem = assertProblem(response, response.status, problemType)
        if (response.status === 412) assert.ok(['stale', 'raw'].includes(condition.kind), context)
        if (response.status === 400 && view.ok) {
          for (const error of problem.errors ?? []) {
            if (error.header !== undefined) {
              assert.equal(error.header, 'If-Match', context)
              assert.equal(condition.kind, 'raw', context)
              continue
            }
            const misfit = pointerMisfit(error.pointer, view.value)
            assert.equal(misfit, undefined, `${misfit}: ${context}`)
          }
        }
        if (sent.kind === 'tree' && sent.mutations === 0 && /^application\/json$/.test(type) && condition.kind !== 'raw') {
          assert.ok(condition.kind === 'stale' && response.status === 412, `a valid PATCH was refused: ${context}`)
        }
      }),
      settings,
    )
    if (runs >= 200) assert.ok(applied >= runs / 20, `only ${applied} of ${runs} PATCHes were applied`)
  })
})
