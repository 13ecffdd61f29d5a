import { Type, type Static, type TSchema, type TUnsafe } from 'typebox'

/*
 * The OpenAPI `components.schemas`. Response schemas refer to them by `$ref`, resolved by Fastify's serializer from
 * the same shared schemas. Request schemas never refer: the validator and the body bounds read them whole.
 */

const names = new Map<TSchema, string>()

export function named<T extends TSchema>(name: string, schema: T): T {
  if ([...names.values()].includes(name)) throw new Error(`two component schemas are named ${name}`)
  names.set(schema, name)
  return schema
}

export const isNamed = (schema: object): boolean => names.has(schema)

/** A reference to a named schema, typed as it. A description wraps it in `allOf`: the generator drops keywords beside a `$ref`. */
export function ref<T extends TSchema>(schema: T, options?: { description: string }): TUnsafe<Static<T>> {
  const name = names.get(schema)
  if (name === undefined) throw new Error('ref() of a schema that is not named()')
  const reference = { $ref: `${name}#` }
  return Type.Unsafe<Static<T>>(options ? { ...options, allOf: [reference] } : reference)
}

/** Every named schema with its name as `$id`, for Fastify's addSchema. */
export function componentSchemas(): object[] {
  return [...names].map(([schema, name]) => ({ $id: name, ...schema }))
}
