/*
 * JSON.parse holds the event loop far longer on a deeply nested body, or one of very many tiny values, than on a
 * plain one of the same size. No route accepts either, so such a body is refused after one pass over its bytes.
 */

/** The deepest any route's body schema allows (assertBodyFits enforces it), counting objects and arrays: `{"a":[{}]}` is 3. */
export const MAX_BODY_DEPTH = 4

/** Every scalar, object and array, the body included: `{"a":[1,2]}` holds 4. Far above the largest create. */
export const MAX_BODY_VALUES = 20_000

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

function escaped(bytes: Uint8Array, at: number): boolean {
  let run = 0
  while (at - run - 1 >= 0 && bytes[at - run - 1] === BACKSLASH) run += 1
  return run % 2 === 1
}

/**
 * Which bound the JSON text breaks, in one pass that stops at the first value or level past it. A container's
 * first value follows its opening bracket (unless that closes it), each further one a comma. Malformed text is
 * JSON.parse's to refuse. UTF-8 sequences never contain ASCII bytes, so the bytes need no decoding.
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
      // To the first unescaped quote by native search: strings are most of a large body's bytes.
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

/** The deepest JSON a schema accepts; Infinity for any depth (a reference, which may recurse, or unconstrained contents). */
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
  // A body of bytes (a media type per content, none of them JSON) is never parsed as JSON.
  const content = (schema as { content?: object }).content
  if (content !== undefined && !Object.keys(content).some((type) => type.endsWith('json'))) return
  const depth = schemaDepth(schema as Schema)
  if (depth > MAX_BODY_DEPTH) {
    throw new Error(`${route}: its body schema nests ${depth} levels deep, past MAX_BODY_DEPTH (${MAX_BODY_DEPTH})`)
  }
}
