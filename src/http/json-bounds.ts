/**
 * How deep a request body may nest, and how many values it may hold. JSON.parse holds the event loop far longer
 * on a deeply nested body, or on one of hundreds of thousands of tiny values, than on a plain one of the same
 * size, and nothing can refuse it before parsing ends. No body any route accepts is either, so such a body is
 * refused before parsing, after one pass over its bytes.
 *
 * Depth counts objects and arrays: a scalar is 0, `{"a":1}` is 1, `{"a":[{}]}` is 3. The bound is the deepest any
 * route's body schema allows (a create's items[].displayName: 4), so a body past it is wrong for every route. app.ts
 * refuses to register a route whose body schema nests deeper (assertBodyFits), and a unit test holds the bound
 * to the deepest schema, so it cannot drift from the schemas either way.
 */
export const MAX_BODY_DEPTH = 4

/**
 * Values count every scalar, object and array, the body itself included: `{"a":[1,2]}` holds 4. The largest body
 * a route accepts (a create of 100 items with every field) holds about a thousand; twenty times that leaves room
 * for schemas to grow, and a unit test holds the largest body within a tenth of it.
 */
export const MAX_BODY_VALUES = 20_000

/** What the 400 says of such a body (pointer ""). */
export const TOO_DEEP = `nests deeper than ${MAX_BODY_DEPTH} levels`
export const TOO_MANY_VALUES = `holds more than ${MAX_BODY_VALUES} values`

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const OPEN_OBJECT = 0x7b
const CLOSE_ARRAY = 0x5d
const CLOSE_OBJECT = 0x7d
const COMMA = 0x2c
const isWhitespace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09

/** Whether the byte at `at` follows an odd run of backslashes. Each run is counted for one quote only. */
function escaped(bytes: Uint8Array, at: number): boolean {
  let run = 0
  while (at - run - 1 >= 0 && bytes[at - run - 1] === BACKSLASH) run += 1
  return run % 2 === 1
}

/**
 * Which bound the JSON text `bytes` breaks, judged in one pass that stops at the first value or level past it:
 * 'depth' (more than `limits.depth` objects and arrays inside each other) or 'values' (more than
 * `limits.values` values), or undefined. Brackets and commas inside strings do not count. The values are the
 * body itself, plus each array element and object member: a container's first one is what follows its opening
 * bracket unless that is its closing one, each further one follows a comma. Malformed text is judged as it
 * comes; JSON.parse refuses it afterwards. Multi-byte UTF-8 sequences never contain ASCII bytes, so the bytes
 * need no decoding first.
 */
export function exceedsBounds(
  bytes: Uint8Array,
  limits: { depth: number; values: number } = { depth: MAX_BODY_DEPTH, values: MAX_BODY_VALUES },
): 'depth' | 'values' | undefined {
  let depth = 0
  let values = 1
  if (values > limits.values) return 'values'
  let inString = false
  let justOpened = false
  for (let i = 0; i < bytes.length; i += 1) {
    if (inString) {
      // To the closing quote in one native search (a string is most of a large body's bytes): the first quote not
      // escaped, i.e. not preceded by an odd run of backslashes.
      let quote = bytes.indexOf(QUOTE, i)
      while (quote >= 0 && escaped(bytes, quote)) quote = bytes.indexOf(QUOTE, quote + 1)
      if (quote < 0) return undefined
      i = quote
      inString = false
      continue
    }
    const byte = bytes[i] as number
    if (isWhitespace(byte)) continue
    if (justOpened) {
      justOpened = false
      if (byte !== CLOSE_ARRAY && byte !== CLOSE_OBJECT && ++values > limits.values) return 'values'
    }
    if (byte === QUOTE) {
      inString = true
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > limits.depth) return 'depth'
      justOpened = true
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth -= 1
    } else if (byte === COMMA) {
      if (++values > limits.values) return 'values'
    }
  }
  return undefined
}

type Schema = {
  type?: string | string[]
  properties?: Record<string, Schema>
  patternProperties?: Record<string, Schema>
  additionalProperties?: boolean | Schema
  items?: Schema | Schema[]
  prefixItems?: Schema[]
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
  $ref?: string
}

/**
 * The deepest JSON a schema accepts, by the same count as nestsDeeperThan; Infinity when it accepts any depth
 * (a reference, which may recurse, or an object or array whose contents are not constrained).
 */
export function schemaDepth(schema: Schema | boolean | undefined): number {
  if (schema === undefined || schema === true) return Infinity
  if (schema === false) return 0
  if (schema.$ref !== undefined) return Infinity
  const alternatives = [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]
  const ofAlternatives = alternatives.length > 0 ? Math.max(...alternatives.map(schemaDepth)) : 0
  const types = schema.type === undefined ? [] : Array.isArray(schema.type) ? schema.type : [schema.type]
  let own = 0
  if (types.includes('object') || schema.properties !== undefined) {
    const children = [...Object.values(schema.properties ?? {}), ...Object.values(schema.patternProperties ?? {}), schema.additionalProperties ?? true]
    own = Math.max(own, 1 + Math.max(...children.map(schemaDepth)))
  }
  if (types.includes('array') || schema.items !== undefined || schema.prefixItems !== undefined) {
    const children = [...(Array.isArray(schema.items) ? schema.items : [schema.items]), ...(schema.prefixItems ?? [])]
    own = Math.max(own, 1 + Math.max(...children.map(schemaDepth)))
  }
  // A schema naming no type at all accepts any value, however deep.
  if (types.length === 0 && alternatives.length === 0 && own === 0 && !('const' in schema) && !('enum' in schema)) return Infinity
  return Math.max(own, ofAlternatives)
}

/** Throws when a route's body schema accepts bodies deeper than MAX_BODY_DEPTH: raise the bound with the schema. */
export function assertBodyFits(route: string, schema: unknown): void {
  if (schema === undefined) return
  const depth = schemaDepth(schema as Schema)
  if (depth > MAX_BODY_DEPTH) {
    throw new Error(`${route}: its body schema nests ${depth} levels deep, past MAX_BODY_DEPTH (${MAX_BODY_DEPTH})`)
  }
}
