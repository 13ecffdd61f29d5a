import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from 'typebox'
import { assertBodyFits, exceedsBounds, MAX_BODY_DEPTH, MAX_BODY_VALUES, schemaDepth } from '../src/http/json-bounds.js'
import { CreateListingBody, PatchListingBody } from '../src/listings/schemas.js'
import { CreateWebhookBody } from '../src/webhooks/schemas.js'
import { item, listingBody } from './fixtures.js'

/** The bounds on request bodies (issue 25): the pre-scan, and the bounds against the route schemas. */

const judge = (text: string, depth = MAX_BODY_DEPTH, values = MAX_BODY_VALUES) => exceedsBounds(Buffer.from(text), { depth, values })

/** Values as exceedsBounds counts them, from the parsed body: every scalar, object and array. */
function countValues(value: unknown): number {
  if (Array.isArray(value)) return 1 + value.reduce((sum: number, element) => sum + countValues(element), 0)
  if (value !== null && typeof value === 'object') return 1 + Object.values(value).reduce((sum: number, member) => sum + countValues(member), 0)
  return 1
}

describe('request body bounds', { timeout: 60_000 }, () => {
  test('depth counts objects and arrays, not brackets inside strings', () => {
    assert.equal(judge('1', 0), undefined)
    assert.equal(judge('{}', 0), 'depth')
    assert.equal(judge('{"a":[{}]}', 3), undefined)
    assert.equal(judge('{"a":[{}]}', 2), 'depth')
    assert.equal(judge('[[],[],[]]', 2), undefined, 'siblings are not nesting')
    assert.equal(judge('{"a":"[[[[[[[[[[{{{{{"}', 1), undefined)
    assert.equal(judge('{"a":"\\"[[[[[[[[[["}', 1), undefined, 'an escaped quote does not end the string')
    assert.equal(judge('{"a":"\\\\"}', 1), undefined, 'an escaped backslash does not escape the quote after it')
    assert.equal(judge('{"a\\\\":[[]]}', 2), 'depth', 'a string ending in an escaped backslash ends there')
    assert.equal(judge('{"ك":["ب"]}', 2), undefined, 'multi-byte characters are no brackets')
    assert.equal(judge('['.repeat(1_000_000)), 'depth')
  })

  test('values count every scalar, object and array, as parsing the body would find them', () => {
    const bodies = [
      '1',
      '[]',
      '{}',
      '[ ]',
      '[1]',
      '[1, 2 ,3]',
      '{"a":[1,2]}',
      '[[],{},[[]],{"a":{}}]',
      '{"a,b":"c,d","[":"]"}',
      JSON.stringify(listingBody({}, 3)),
    ]
    for (const body of bodies) {
      const count = countValues(JSON.parse(body))
      assert.equal(judge(body, 100, count), undefined, `${body}: ${count} values fit ${count}`)
      assert.equal(judge(body, 100, count - 1), 'values', `${body}: ${count} values do not fit ${count - 1}`)
    }
    assert.equal(judge(`[${'{},'.repeat(300_000)}{}]`), 'values')
  })

  test('every route body schema fits within MAX_BODY_DEPTH, and the deepest reaches it', () => {
    const depths = [CreateListingBody, PatchListingBody, CreateWebhookBody].map((schema) => schemaDepth(schema as never))
    for (const depth of depths) assert.ok(depth <= MAX_BODY_DEPTH, `a body schema nests ${depth} levels`)
    assert.equal(Math.max(...depths), MAX_BODY_DEPTH, 'the bound is the deepest schema, not more')
  })

  test('the largest create there is (100 items, every optional field) holds a tenth of MAX_BODY_VALUES at most', () => {
    const imageUrl = `https://images.example.com/${'a'.repeat(100)}.png`
    const body = listingBody({}, 0)
    body.items = Array.from({ length: 100 }, (_, i) => item(i, { imageUrl, quantity: 5 }))
    const values = countValues(body)
    assert.ok(values * 10 <= MAX_BODY_VALUES, `${values} values`)
    assert.equal(judge(JSON.stringify(body)), undefined)
  })

  test('schema depth: open objects and arrays, references and untyped schemas accept any depth', () => {
    const closed = { additionalProperties: false }
    assert.equal(schemaDepth(Type.Object({ a: Type.String() }, closed) as never), 1)
    assert.equal(schemaDepth(Type.Object({ a: Type.Array(Type.Object({ b: Type.Number() }, closed)) }, closed) as never), 3)
    assert.equal(schemaDepth(Type.Object({ a: Type.Union([Type.String(), Type.Array(Type.String())]) }, closed) as never), 2)
    assert.equal(schemaDepth(Type.Object({ a: Type.String() }) as never), Infinity, 'unknown fields may be anything')
    assert.equal(schemaDepth(Type.Object({ a: Type.Unknown() }, closed) as never), Infinity)
    assert.equal(schemaDepth({ $ref: '#/definitions/x' }), Infinity)
  })

  test('a route whose body schema nests deeper than the bound is refused at start-up', () => {
    let schema: object = Type.String()
    for (let i = 0; i < MAX_BODY_DEPTH; i += 1) schema = Type.Object({ a: schema as never }, { additionalProperties: false })
    assert.doesNotThrow(() => assertBodyFits('POST /fits', schema))
    const deep = Type.Object({ a: schema as never }, { additionalProperties: false })
    assert.throws(() => assertBodyFits('POST /deep', deep), {
      message: `POST /deep: its body schema nests ${MAX_BODY_DEPTH + 1} levels deep, past MAX_BODY_DEPTH (${MAX_BODY_DEPTH})`,
    })
  })
})
