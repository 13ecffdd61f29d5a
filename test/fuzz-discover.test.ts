import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { listingBody } from './fixtures.js'
import { assertIsProblem, assertNoPollution, discoverQuery, fuzzEachDialect, send } from './fuzz-support.js'

// Fuzzing GET /api/v1/discover with random query strings: see fuzz-support.ts for what every answer must be.

await fuzzEachDialect('discover', ({ service, provider, runs, settings }) => {
  test(`discover: ${runs} random query strings; 200 only for a valid one, a 400 names exactly the bad parameters`, async () => {
    const marketplace = await service.newMarketplace()
    const here = { latitude: 24.7136, longitude: 46.6753 }
    assert.equal((await service.create(provider.token, listingBody({ location: here }))).status, 201)
    await fc.assert(
      fc.asyncProperty(discoverQuery, async (query) => {
        const response = await send(service.baseUrl, 'GET', `/api/v1/discover?${query.text}`, { authorization: `Bearer ${marketplace.token}` })
        const context = `${query.text} → ${response.status} ${response.text.slice(0, 300)}`
        assertNoPollution()
        if (response.status === 200) {
          assert.deepEqual(query.bad, [], `a query with bad parameters was answered: ${context}`)
          assert.ok(Array.isArray(response.body?.data) && response.body.data.length <= 50, context)
          return
        }
        const problem = assertIsProblem(response)
        assert.equal(response.status, 400, context)
        const named = [...new Set<string>(problem.errors.map((error: any) => error.parameter))].sort()
        assert.deepEqual(named, query.bad.length > 0 ? query.bad : ['cursor'], context)
        if (query.bad.length === 0) assert.ok(query.foreignCursor, `a valid query was refused: ${context}`)
      }),
      settings,
    )
  })
})
