import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Type } from 'typebox'
import { assertBodyFits, MAX_BODY_DEPTH, nestsDeeperThan, schemaDepth } from '../src/http/json-depth.js'
import { CreateListingBody, PatchListingBody } from '../src/listings/schemas.js'
import { CreateWebhookBody } from '../src/webhooks/schemas.js'

/** The nesting bound of request bodies (issue 25): the pre-scan, and the bound against the route schemas. */

const deeper = (text: string, max = MAX_BODY_DEPTH) => nestsDeeperThan(Buffer.from(text), max)

describe('request body nesting', { timeout: 60_000 }, () => {
  test('the pre-scan counts objects and arrays, not brackets inside strings', () => {
    assert.equal(deeper('1', 0), false)
    assert.equal(deeper('{}', 0), true)
    assert.equal(deeper('{"a":[{}]}', 3), false)
    assert.equal(deeper('{"a":[{}]}', 2), true)
    assert.equal(deeper('[[],[],[]]', 2), false, 'siblings are not nesting')
    assert.equal(deeper('{"a":"[[[[[[[[[[{{{{{"}', 1), false)
    assert.equal(deeper('{"a":"\\"[[[[[[[[[["}', 1), false, 'an escaped quote does not end the string')
    assert.equal(deeper('{"a":"\\\\"}', 1), false, 'an escaped backslash does not escape the quote after it')
    assert.equal(deeper('{"a\\\\":[[]]}', 2), true, 'a string ending in an escaped backslash ends there')
    assert.equal(deeper('{"ك":["ب"]}', 2), false, 'multi-byte characters are no brackets')
    assert.equal(deeper('['.repeat(1_000_000)), true)
  })

  test('every route body schema fits within MAX_BODY_DEPTH, and the deepest reaches it', () => {
    const depths = [CreateListingBody, PatchListingBody, CreateWebhookBody].map((schema) => schemaDepth(schema as never))
    for (const depth of depths) assert.ok(depth <= MAX_BODY_DEPTH, `a body schema nests ${depth} levels`)
    assert.equal(Math.max(...depths), MAX_BODY_DEPTH, 'the bound is the deepest schema, not more')
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
