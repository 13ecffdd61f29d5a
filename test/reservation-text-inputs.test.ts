import assert from 'node:assert/strict'
import { test } from 'node:test'
import { describeEachDialect } from './helper.js'
import { assertProblem, pointersOf } from './http-support.js'

// A NUL in a hold's listingId, or in the list's, reached PostgreSQL, which has no NUL in text: a 500 (found by
// test/fuzz-reservations.test.ts). Every bad input is a 400 naming its field, on both databases.

await describeEachDialect('reservation text inputs', (service) => {
  test('a NUL in a hold’s or the list’s listingId is a 400 naming it, not a 500', async () => {
    const { token } = await service.newMarketplace()
    const hold = await service.request('POST', '/api/v1/reservations', {
      token,
      json: { listingId: 'a\u0000b', referenceId: 'basket-1', items: [{ position: 0, quantity: 1 }] },
    })
    assert.deepEqual(pointersOf(assertProblem(hold, 400, 'invalid-request')), ['/listingId'])
    const list = await service.request('GET', '/api/v1/reservations?listingId=a%00b', { token })
    const problem = assertProblem(list, 400, 'invalid-request')
    assert.deepEqual(
      problem.errors.map((error: { parameter: string }) => error.parameter),
      ['listingId'],
    )
  })
})
