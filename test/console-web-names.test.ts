import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { webNameOf, webNameTyped } from '../console/src/form-values.js'
import { validate, type Schema } from '../console/src/validate.js'
import { createAjv } from '../src/http/validation.js'
import { CreateListingBody } from '../src/listings/schemas.js'

// The console's web names (urlSafeName): derived from the English name as it is typed, and what is typed into a
// web name field made acceptable as it is typed. Both must always be what the API takes (or empty, which the
// form reports as required).

const urlSafeName = (CreateListingBody as unknown as { properties: { brand: { properties: { urlSafeName: object } } } }).properties.brand.properties.urlSafeName

/** The API's own rule for a urlSafeName, by the server's Ajv set-up, through the console's schema check. */
const checkUrlSafeName = createAjv().compile(JSON.parse(JSON.stringify(urlSafeName)) as object) as Schema
const accepted = (name: string) => validate(checkUrlSafeName, name).length === 0

test('derived from the English name: lower case, words joined by "-", accents dropped, RFC 3986 unreserved only', () => {
  assert.equal(webNameOf('Morning Bakery'), 'morning-bakery')
  assert.equal(webNameOf('  Café  Crème brûlée! '), 'cafe-creme-brulee')
  assert.equal(webNameOf('Mr. Baker’s 24/7 shop'), 'mr.-baker-s-24-7-shop')
  assert.equal(webNameOf('مخبز'), '', 'nothing to derive from Arabic letters')
  const long = webNameOf(`${'a'.repeat(99)} b`)
  assert.equal(long, 'a'.repeat(99), 'cut at 100 without a trailing "-"')
})

test('typed into a web name field: a space becomes "-", case is kept, other characters are dropped', () => {
  assert.equal(webNameTyped('Morning Bakery'), 'Morning-Bakery')
  assert.equal(webNameTyped('morning bakery '), 'morning-bakery-', 'a trailing space is kept as "-" so typing goes on')
  assert.equal(webNameTyped('crème/brûlée?'), 'cremebrulee')
  assert.equal(webNameTyped('a_b.c~d-e'), 'a_b.c~d-e', 'every unreserved character stays')
  assert.equal(webNameTyped('x'.repeat(150)).length, 100)
})

test('any text gives a web name the API accepts, or nothing', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), (text) => {
      for (const name of [webNameOf(text), webNameTyped(text)]) {
        assert.ok(name === '' || accepted(name), JSON.stringify({ text, name }))
      }
      // An English name with a letter or a digit always gives one.
      if (/[A-Za-z0-9]/.test(text)) assert.ok(accepted(webNameOf(text)), JSON.stringify(text))
    }),
    { numRuns: 2000 },
  )
})
