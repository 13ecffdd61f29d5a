/**
 * A small interpreter of the JSON Schema keywords the API's request schemas use (src/listings/schemas.ts,
 * src/webhooks/schemas.ts), run on the schemas themselves as the build copies them (console/build.ts): the
 * console checks what the service checks, from the same source, before sending. The service's answer still
 * decides. Custom formats are the service's (src/http/validation.ts), restated for the browser.
 */

export interface Schema {
  type?: string
  properties?: Record<string, Schema>
  required?: string[]
  additionalProperties?: boolean
  items?: Schema
  minItems?: number
  maxItems?: number
  uniqueItems?: boolean
  enum?: unknown[]
  minimum?: number
  maximum?: number
  multipleOf?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
}

export interface Issue {
  pointer: string
  keyword: string
  /** The keyword's value in the schema (a limit, a pattern, a format…). */
  limit?: unknown
}

// eslint-disable-next-line no-control-regex -- NUL is what this pattern exists to find.
const UNSTORABLE = /[\u0000\uD800-\uDFFF]/u

const formats: Record<string, (value: string) => boolean> = {
  text: (value) => !UNSTORABLE.test(value),
  'display-name': (value) => /\S/u.test(value) && !UNSTORABLE.test(value),
  'http-url': (value) => {
    try {
      const url = new URL(value)
      return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && url.username === '' && url.password === ''
    } catch {
      return false
    }
  },
}

/** Decimal places as JavaScript prints the number: the service's exact `multipleOf` for powers of ten. */
export function decimalPlaces(value: number): number {
  if (Number.isInteger(value)) return 0
  const text = String(value)
  if (!text.includes('e')) return text.length - text.indexOf('.') - 1
  const [mantissa = '', exponent = '0'] = text.split('e')
  return Math.max(0, (mantissa.split('.')[1] ?? '').length - Number(exponent))
}

function typeMatches(type: string, value: unknown): boolean {
  switch (type) {
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value)
    case 'array':
      return Array.isArray(value)
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value)
    case 'number':
      return typeof value === 'number' && Number.isFinite(value)
    default:
      return typeof value === type
  }
}

const escape = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1')

/** Every problem with `value`, at most one per place (the first found), as the service reports them. */
export function validate(schema: Schema, value: unknown, pointer = '', issues: Issue[] = []): Issue[] {
  const report = (keyword: string, limit?: unknown, at = pointer) => {
    if (!issues.some((issue) => issue.pointer === at)) issues.push({ pointer: at, keyword, limit })
  }
  if (schema.type !== undefined && !typeMatches(schema.type, value)) {
    report('type', schema.type)
    return issues
  }
  if (schema.enum && !schema.enum.includes(value)) report('enum', schema.enum)
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) report('minimum', schema.minimum)
    if (schema.maximum !== undefined && value > schema.maximum) report('maximum', schema.maximum)
    if (schema.multipleOf !== undefined && decimalPlaces(value) > decimalPlaces(schema.multipleOf)) {
      report('multipleOf', decimalPlaces(schema.multipleOf))
    }
  }
  if (typeof value === 'string') {
    // eslint-disable-next-line @typescript-eslint/no-misused-spread -- code points are what JSON Schema's lengths count.
    const length = [...value].length
    if (schema.minLength !== undefined && length < schema.minLength) report('minLength', schema.minLength)
    if (schema.maxLength !== undefined && length > schema.maxLength) report('maxLength', schema.maxLength)
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) report('pattern', schema.pattern)
    const format = schema.format === undefined ? undefined : formats[schema.format]
    if (format && !format(value)) report('format', schema.format)
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) report('minItems', schema.minItems)
    if (schema.maxItems !== undefined && value.length > schema.maxItems) report('maxItems', schema.maxItems)
    if (schema.uniqueItems && new Set(value.map((v) => JSON.stringify(v))).size !== value.length) report('uniqueItems')
    if (schema.items) value.forEach((item, index) => validate(schema.items as Schema, item, `${pointer}/${index}`, issues))
  }
  if (typeMatches('object', value)) {
    const object = value as Record<string, unknown>
    for (const name of schema.required ?? []) {
      if (object[name] === undefined) report('required', undefined, `${pointer}/${escape(name)}`)
    }
    for (const [name, child] of Object.entries(object)) {
      // An undefined value is an absent one: JSON.stringify leaves it out of the body sent.
      if (child === undefined) continue
      const property = schema.properties?.[name]
      if (property) validate(property, child, `${pointer}/${escape(name)}`, issues)
      else if (schema.additionalProperties === false) report('additionalProperties', undefined, `${pointer}/${escape(name)}`)
    }
  }
  return issues
}
