import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { LIST, assertIsProblem, assertNoPollution, fuzzEachDialect, queryString } from './fuzz-support.js'

// Fuzzing GET /api/v1/listing with random query strings: see fuzz-support.ts for what every answer must be.

await fuzzEachDialect('list', ({ runs, settings, get }) => {
  test(`list: ${runs} random query strings; 400 names a parameter sent, 200 only for a valid query`, async () => {
    await fc.assert(
      fc.asyncProperty(queryString, async (query) => {
        const response = await get(`${LIST}${query.text}`)
        const context = `${query.text} → ${response.status} ${response.text.slice(0, 300)}`
        assertNoPollution()
        if (response.status === 200) {
          assert.notEqual(query.valid, false, `a query that is not valid was answered: ${context}`)
          assert.ok(Array.isArray(response.body?.content), context)
          assert.ok(Number.isInteger(response.body.recordCount) && response.body.recordCount >= 0, context)
          assert.ok(response.body.content.length <= 50, context)
          return
        }
        const problem = assertIsProblem(response)
        assert.equal(response.status, 400, context)
        assert.notEqual(query.valid, true, `a valid query was refused: ${context}`)
        assert.ok(problem.errors.length > 0, context)
        for (const error of problem.errors) {
          assert.equal(error.pointer, undefined, context)
          assert.ok(query.names === undefined || query.names.includes(error.parameter), `${error.parameter} was not sent: ${context}`)
        }
      }),
      settings,
    )
  })
})
