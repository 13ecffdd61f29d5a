/**
 * How deep a request body may nest. JSON.parse holds the event loop far longer on a deeply nested body than on a
 * flat one of the same size, and nothing can refuse it before parsing ends; no body any route accepts nests
 * deep, so such a body is refused before parsing, after one pass over its bytes.
 *
 * Depth counts objects and arrays: a scalar is 0, `{"a":1}` is 1, `{"a":[{}]}` is 3. The bound is the deepest any
 * route's body schema allows (a create's items[].displayName: 4), so a body past it is wrong for every route. app.ts
 * refuses to register a route whose body schema nests deeper (assertBodyFits), and a unit test holds the bound
 * to the deepest schema, so it cannot drift from the schemas either way.
 */
export const MAX_BODY_DEPTH = 4

/** What the 400 says of such a body (pointer ""). */
export const TOO_DEEP = `nests deeper than ${MAX_BODY_DEPTH} levels`

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const OPEN_OBJECT = 0x7b
const CLOSE_ARRAY = 0x5d
const CLOSE_OBJECT = 0x7d

/**
 * Whether the JSON text `bytes` opens more than `max` objects and arrays inside each other, judged in one pass
 * that stops at the first level past `max`. Brackets inside strings are not nesting. Malformed text is judged
 * as it comes; JSON.parse refuses it afterwards. Multi-byte UTF-8 sequences never contain ASCII bytes, so the
 * bytes need no decoding first.
 */
export function nestsDeeperThan(bytes: Uint8Array, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < bytes.length; i += 1) {
    const byte = bytes[i] as number
    if (inString) {
      if (byte === BACKSLASH) i += 1
      else if (byte === QUOTE) inString = false
    } else if (byte === QUOTE) {
      inString = true
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      depth += 1
      if (depth > max) return true
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth -= 1
    }
  }
  return false
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
    const children = [
      ...Object.values(schema.properties ?? {}),
      ...Object.values(schema.patternProperties ?? {}),
      schema.additionalProperties ?? true,
    ]
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
