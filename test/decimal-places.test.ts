import assert from 'node:assert/strict'
import { test } from 'node:test'
import { decimalPlaces } from '../src/http/schema-vocabulary.js'

// Prices allow at most 3 decimals (docs/api.md#create-a-listing), counted on the number's shortest round-trip form, which is
// exact where dividing by 0.001 in floating point is not.
const cases: Array<[value: number, places: number]> = [
  [0, 0],
  [1, 0],
  [1_000_000_000, 0],
  [1e21, 0], // printed 1e+21
  [19.99, 2],
  [7.125, 3],
  [0.1 + 0.2, 17], // 0.30000000000000004
  [123456.789, 3],
  [-2.5, 1],
  [1e-7, 7], // printed 1e-7
  [1.5e-5, 6], // printed 0.000015
  [2.5e-7, 8], // printed 2.5e-7
]

for (const [value, places] of cases) {
  test(`decimalPlaces(${value}) = ${places}`, () => {
    assert.equal(decimalPlaces(value), places)
  })
}
