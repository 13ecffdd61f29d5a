import { Type, type Static, type TSchema, type TUnsafe } from 'typebox'

/**
 * The schemas the OpenAPI document names under `components.schemas`: each is written there once, and every
 * response schema that reuses it refers to it by `$ref`. Fastify's serializer resolves the same references from
 * the same schemas, which registerOpenApi adds as shared schemas before any route.
 *
 * Request schemas never refer: the validator (validation.ts) and the body bounds (json-bounds.ts) read them whole,
 * so a named schema used in a request is simply used as it is.
 */

const names = new Map<TSchema, string>()

/** Names `schema` as a component of the document; the schema itself is returned unchanged. */
export function named<T extends TSchema>(name: string, schema: T): T {
  if ([...names.values()].includes(name)) throw new Error(`two component schemas are named ${name}`)
  names.set(schema, name)
  return schema
}

export const isNamed = (schema: object): boolean => names.has(schema)

/**
 * A reference to a named schema, typed as the schema. With a description of its own, the reference is wrapped
 * in `allOf`: the document generator drops every keyword beside a `$ref`.
 */
export function ref<T extends TSchema>(schema: T, options?: { description: string }): TUnsafe<Static<T>> {
  const name = names.get(schema)
  if (name === undefined) throw new Error('ref() of a schema that is not named()')
  const reference = { $ref: `${name}#` }
  return Type.Unsafe<Static<T>>(options ? { ...options, allOf: [reference] } : reference)
}

/** Every named schema with its name as `$id`, as Fastify's addSchema takes them. */
export function componentSchemas(): object[] {
  return [...names].map(([schema, name]) => ({ $id: name, ...schema }))
}
