import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { assertProblem, countListings } from './http-support.js'
import { fuzzEachDialect, idSegment, send } from './fuzz-support.js'

// Fuzzing every shape of listing id in the path of GET, PATCH and withdraw: see fuzz-support.ts for what every answer must be.

await fuzzEachDialect('ids', ({ service, provider, runs, settings }) => {
  test(`ids: ${runs} path segments of every shape on GET, PATCH and withdraw; a 404 or 400, never a 5xx, nothing changes`, async () => {
    const count = await countListings(service)
    await fc.assert(
      fc.asyncProperty(idSegment, fc.constantFrom('GET', 'PATCH', 'POST'), async (segment, method) => {
        const path = method === 'POST' ? `/api/v1/listing/${segment}/withdraw` : `/api/v1/listing/${segment}`
        const body = method === 'PATCH' ? Buffer.from('{"items":[{"position":0,"quantity":1}]}') : undefined
        const headers: Record<string, string> = { authorization: `Bearer ${provider.token}` }
        if (body) Object.assign(headers, { 'content-type': 'application/json', 'content-length': String(body.length) })
        const response = await send(service.baseUrl, method, path, headers, body)
        const context = `${method} ${path.slice(0, 120)} → ${response.status} ${response.text.slice(0, 200)}`
        // `create` names the create route: any other method there is 405. A `.` segment is removed from the path,
        // so POST …/./withdraw is a POST to …/withdraw, a listing id's route, which has no POST: 405 too.
        const wrongMethod = (segment === 'create' && method !== 'POST') || (segment === '.' && method === 'POST')
        const expected = wrongMethod ? [405] : [400, 404]
        assert.ok(expected.includes(response.status), context)
        const type = response.status === 404 ? 'not-found' : response.status === 405 ? 'method-not-allowed' : 'invalid-request'
        assertProblem(response, response.status, type)
      }),
      settings,
    )
    assert.equal(await countListings(service), count)
  })
})
