import { _, Ajv, type Code, type ErrorObject, type ValidateFunction } from 'ajv'
import type { FastifySchemaCompiler } from 'fastify'
import { Type, type TSchema, type TUnsafe } from 'typebox'
import { invalidRequest, type ProblemDetail } from '../errors.js'
import { MAX_ENTITY_TAGS_LENGTH, parseEntityTags } from './conditional.js'
import { cursorFormat } from '../discovery/cursor.js'
import { bodyFormats, decimalPlaces, errorPointer, type StringFormat } from './schema-vocabulary.js'

/* Request validation for every route: one strict Ajv (no coercion, unknown fields rejected, every error collected). */

/** Every custom format a schema may name: those of bodies, and the server's own for queries and headers. */
const formats: Record<string, StringFormat> = {
  ...bodyFormats,
  'discovery-cursor': cursorFormat,
  'entity-tags': {
    validate: (value) => parseEntityTags(value) !== undefined,
    message: (value) =>
      value.length > MAX_ENTITY_TAGS_LENGTH
        ? `must be at most ${MAX_ENTITY_TAGS_LENGTH} characters`
        : 'must be * or a comma-separated list of entity tags such as "3"',
  },
}

/**
 * `multipleOf`, exact for powers of ten: Ajv's divides in floating point and refuses 19.99 as a multiple of 0.001.
 * Written as code, so that generated validators (`vocabulary`) can name the function they call.
 */
function addExactMultipleOf(ajv: Ajv, vocabulary: Code | undefined): void {
  ajv.removeKeyword('multipleOf')
  ajv.addKeyword({
    keyword: 'multipleOf',
    type: 'number',
    schemaType: 'number',
    code(cxt) {
      const step = cxt.schema as number
      const places = decimalPlaces(step)
      if (step !== 10 ** -places) throw new Error(`multipleOf supports powers of ten only, not ${step}`)
      const count = cxt.gen.scopeValue('func', { ref: decimalPlaces, code: vocabulary && _`${vocabulary}.decimalPlaces` })
      cxt.fail(_`${count}(${cxt.data}) > ${places}`)
    },
    error: {
      message: (cxt) => `must have at most ${decimalPlaces(cxt.schema as number)} decimal places`,
      params: (cxt) => _`{limit: ${decimalPlaces(cxt.schema as number)}}`,
    },
  })
}

/**
 * The one strict Ajv (no coercion, unknown fields rejected, every error collected). For the console's generated
 * validators, `generated.vocabulary` is how their code imports schema-vocabulary.ts: they fill in no defaults, so
 * what is checked is what is sent.
 */
export function createAjv(generated?: { vocabulary: Code }): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    useDefaults: !generated,
    coerceTypes: false,
    removeAdditional: false,
    verbose: !generated,
    strict: true,
    ...(generated && { code: { source: true, esm: true, formats: _`${generated.vocabulary}.bodyFormats` } }),
  })
  for (const [name, format] of Object.entries(formats)) {
    ajv.addFormat(name, { type: 'string', validate: format.validate })
  }
  addExactMultipleOf(ajv, generated?.vocabulary)
  return ajv
}

/** A schema typed as validation leaves the value: with every `default` filled in, which TypeBox's Static cannot see. */
export function defaultsFilled<Filled>(schema: TSchema): TUnsafe<Filled> {
  return Type.Unsafe<Filled>(schema)
}

const typeNames: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
}

/** One Ajv error as the place it concerns (a JSON Pointer) and a sentence about it. */
function describe(error: ErrorObject, field: string): { path: string; detail: string } {
  const params = error.params as Record<string, unknown>
  const path = errorPointer(error)
  if (error.keyword === 'required') return { path, detail: 'is required' }
  if (error.keyword === 'additionalProperties') return { path, detail: `is not an accepted ${field}` }
  return { path, detail: detailOf(error, params) }
}

function detailOf(error: ErrorObject, params: Record<string, unknown>): string {
  const limit = String(params.limit)
  switch (error.keyword) {
    case 'type':
      return `must be ${typeNames[String(params.type)] ?? String(params.type)}`
    case 'minimum':
      return `must be >= ${limit}`
    case 'maximum':
      return `must be <= ${limit}`
    case 'minLength':
      return params.limit === 1 ? 'must not be empty' : `must be at least ${limit} characters`
    case 'maxLength':
      return `must be at most ${limit} characters`
    case 'minItems':
      return params.limit === 1 ? 'must have at least 1 item' : `must have at least ${limit} items`
    case 'maxItems':
      return `must have at most ${limit} items`
    case 'enum':
      return `must be one of: ${(params.allowedValues as unknown[]).map(String).join(', ')}`
    case 'format': {
      const format = formats[String(params.format)]
      return format ? format.message(String(error.data)) : String(error.message)
    }
    case 'pattern':
      return `must match the pattern ${String(params.pattern)}`
    default:
      return error.message ?? 'is invalid'
  }
}

// A large body of empty objects could otherwise produce millions; the first thousand say enough.
const MAX_REPORTED = 1000

type Place = 'pointer' | 'parameter' | 'header'

/** "if-match" (as Node gives it) is "If-Match". */
const headerName = (name: string) => name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => dash + letter.toUpperCase())

function toProblemDetails(errors: ErrorObject[], where: Place, extra: ProblemDetail[] = []) {
  const seen = new Set<string>(extra.map((e) => `/${e.parameter}`))
  const details: ProblemDetail[] = [...extra]
  for (const error of errors) {
    const { path, detail } = describe(error, where === 'pointer' ? 'field' : where)
    // One problem per field (the first Ajv finds): "" is "must not be empty", not also "must contain…".
    if (seen.has(path)) continue
    seen.add(path)
    if (where === 'pointer') details.push({ pointer: path, detail })
    else if (where === 'parameter') details.push({ parameter: path.slice(1), detail })
    else details.push({ header: headerName(path.slice(1)), detail })
    if (details.length >= MAX_REPORTED) break
  }
  return details
}

type QuerySchema = { properties?: Record<string, { type?: string }> }

const INTEGER_TEXT = /^-?\d{1,20}$/
/** A number as JSON writes one: "24.7136", "-0.5", "5", "1e-7"; not ".5", "5.", "+1", " 1", "0x10", "Infinity". */
const DECIMAL_TEXT = /^-?\d{1,20}(\.\d{1,30})?([eE][+-]?\d{1,3})?$/

/**
 * Query values are converted to numbers only when written as JSON writes them, so "0x10", " 1" or "" stay strings
 * and fail the type check; a repeated parameter is an error of its own.
 */
function validateQuery(validate: ValidateFunction, schema: QuerySchema, data: unknown) {
  // No prototype, so that `__proto__` is kept for the schema to refuse as unknown.
  const converted = Object.create(null) as Record<string, unknown>
  const repeated: ProblemDetail[] = []
  for (const [name, value] of Object.entries((data ?? {}) as Record<string, unknown>)) {
    if (Array.isArray(value)) {
      repeated.push({ parameter: name, detail: 'must be given at most once' })
      continue
    }
    const type = schema.properties?.[name]?.type
    converted[name] =
      typeof value === 'string' && ((type === 'integer' && INTEGER_TEXT.test(value)) || (type === 'number' && DECIMAL_TEXT.test(value))) ? Number(value) : value
  }
  const valid = validate(converted)
  if (valid && repeated.length === 0) return { value: converted }
  return { error: invalidRequest(toProblemDetails(validate.errors ?? [], 'parameter', repeated)) }
}

/** Fastify's validator compiler: one 400 listing every problem found. */
export function validatorCompiler(ajv: Ajv): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart }) => {
    const validate = ajv.compile(schema as object)
    if (httpPart === 'querystring') return (data) => validateQuery(validate, schema as QuerySchema, data)
    const where: Place = httpPart === 'headers' ? 'header' : httpPart === 'params' ? 'parameter' : 'pointer'
    return (data) => (validate(data) ? { value: data } : { error: invalidRequest(toProblemDetails(validate.errors ?? [], where)) })
  }
}
