import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { pointerMisfit, serialize } from './fuzz-json.js'
import { BODY_LIMIT, assertIsProblem, assertNoPollution, contentType, endpointBody, fuzzEachDialect, parsed, send } from './fuzz-support.js'

// Fuzzing POST /api/v1/webhooks with random and mutated endpoint bodies: see fuzz-support.ts for what every answer must be.

await fuzzEachDialect('webhooks', ({ service, provider, runs, settings, get }) => {
  test(`webhooks: ${runs} random and mutated endpoint bodies; never a 5xx, pointers resolve, only a 201 creates one`, async () => {
    let created = 0
    await fc.assert(
      fc.asyncProperty(endpointBody, contentType, async (sent, type) => {
        const bytes = sent.kind === 'tree' ? Buffer.from(serialize(sent.tree)) : sent.bytes
        const view = bytes.length > BODY_LIMIT ? { ok: false as const } : parsed(bytes)
        const headers: Record<string, string> = { authorization: `Bearer ${provider.token}`, 'content-length': String(bytes.length) }
        if (type !== '') headers['content-type'] = type
        const response = await send(service.baseUrl, 'POST', '/api/v1/webhooks', headers, bytes)
        const context = `${bytes.toString('utf8').slice(0, 200)} (${type}) → ${response.status} ${response.text.slice(0, 300)}`
        assertNoPollution()
        const listed = await get('/api/v1/webhooks')
        if (response.status === 201) {
          created += 1
          assert.ok(view.ok, context)
          assert.match(response.body.secret, /^whsec_/, context)
          assert.deepEqual(
            listed.body.data.map((one: { id: string }) => one.id),
            [response.body.id],
            context,
          )
          const deleted = await send(service.baseUrl, 'DELETE', `/api/v1/webhooks/${response.body.id}`, { authorization: `Bearer ${provider.token}` })
          assert.equal(deleted.status, 204, context)
          return
        }
        assert.deepEqual(listed.body.data, [], context)
        const problem = assertIsProblem(response)
        if (response.status !== 400 || !view.ok) return
        for (const error of problem.errors ?? []) {
          const misfit = pointerMisfit(error.pointer, view.value)
          assert.equal(misfit, undefined, `${misfit}: ${context}`)
        }
      }),
      settings,
    )
    if (runs >= 200) assert.ok(created >= runs / 20, `only ${created} of ${runs} cases created an endpoint`)
  })
})
