import { errorPointer } from '../../src/http/schema-vocabulary.js'

/** A validator generated at build time from one of the API's request schemas (console/build.ts). */
export interface Schema {
  (value: unknown): boolean
  errors?: Array<{ instancePath: string; keyword: string; params: Record<string, unknown> }> | null
}

export interface Issue {
  pointer: string
  keyword: string
  /** What the keyword asked for (a limit, the allowed values, a format…), for the message. */
  limit?: unknown
}

/** Every problem with the body as it would be sent, one per place (the first found), as the service reports them. */
export function validate(schema: Schema, value: unknown): Issue[] {
  if (schema(JSON.parse(JSON.stringify(value)))) return []
  const issues = new Map<string, Issue>()
  for (const error of schema.errors ?? []) {
    const pointer = errorPointer(error)
    const { limit, type, allowedValues, format } = error.params
    if (!issues.has(pointer)) issues.set(pointer, { pointer, keyword: error.keyword, limit: limit ?? type ?? allowedValues ?? format })
  }
  return [...issues.values()]
}
