import { invalidRequest, notFoundParameter, Problem, referenceConflict, PROBLEM_CONTENT_TYPE, problemTypes, type ProblemType } from '../errors.js'

/**
 * The error responses of the OpenAPI document, from each route's `x-problems`. Document only, never the routes'
 * `response` schemas: Fastify would then re-serialise every problem, dropping members the schema does not list.
 */

declare module 'fastify' {
  interface FastifySchema {
    /** The problem types this route can answer with; documentation only. */
    'x-problems'?: readonly ProblemType[]
  }
}

/** The last `x-problems` of a route that reads a JSON body: one too large or not JSON, then the server's own. */
export const BODY_PROBLEMS = ['payload-too-large', 'unsupported-media-type', 'internal', 'unavailable'] as const satisfies readonly ProblemType[]

/** The document's example of each type, made by the same Problem class the error handler sends. */
const problemExamples: Record<ProblemType, Problem> = {
  'invalid-request': invalidRequest([
    { pointer: '/items/0/price', detail: 'must be >= 1' },
    { pointer: '/listingDetails/discountRate', detail: 'must be <= 1' },
  ]),
  'image-unavailable': new Problem('image-unavailable', 'the server answered HTTP 404', {
    errors: [{ pointer: '/items/0/imageUrl', detail: 'the server answered HTTP 404' }],
  }),
  unauthorized: new Problem('unauthorized', 'the token is unknown or has been revoked'),
  forbidden: new Problem('forbidden', 'this route is for providers; the token is a marketplace’s'),
  'not-found': notFoundParameter('listingId', 'no listing of yours has this id'),
  'request-timeout': new Problem('request-timeout', 'the request was not received in time; the connection is closed'),
  'request-headers-too-large': new Problem('request-headers-too-large', 'the request headers are too large'),
  'method-not-allowed': new Problem('method-not-allowed', 'GET is not a method of /api/v1/listing/create; it has POST'),
  conflict: referenceConflict('listings'),
  'listing-closed': new Problem('listing-closed', 'the listing is withdrawn: it can no longer change'),
  'insufficient-stock': new Problem('insufficient-stock', 'not every line fits in what is available: nothing is held', {
    errors: [{ pointer: '/items/0/quantity', detail: 'only 3 available', available: 3 }],
  }),
  'reservation-expired': new Problem('reservation-expired', 'the hold ran out at 2026-11-27T18:10:00.000Z: its units are free again'),
  'reservation-closed': new Problem('reservation-closed', 'the reservation is released: it cannot be confirmed'),
  'precondition-failed': new Problem('precondition-failed', 'If-Match does not name the current version "3"'),
  'payload-too-large': new Problem('payload-too-large', 'request body is larger than 1 MiB'),
  'image-too-large': new Problem('image-too-large', 'image is 7.3 MB; the limit is 5 MiB', {
    errors: [{ pointer: '/brand/imageUrl', detail: 'image is 7.3 MB; the limit is 5 MiB' }],
  }),
  'unsupported-media-type': new Problem('unsupported-media-type', 'Content-Type must be application/json'),
  'unsupported-image-format': new Problem('unsupported-image-format', 'content is image/bmp; accepted: jpg, png, gif, webp', {
    errors: [{ pointer: '/items/1/imageUrl', detail: 'content is image/bmp; accepted: jpg, png, gif, webp' }],
  }),
  'rate-limited': new Problem('rate-limited', 'more than 600 requests in a minute; retry after 12 seconds'),
  internal: new Problem('internal', 'an unexpected error occurred; quote the X-Request-Id'),
  unavailable: new Problem('unavailable', 'the database does not answer'),
}

// An operation without a body can only be wrong in its query: its 400 example names a parameter.
const queryExample = invalidRequest([{ parameter: 'limit', detail: 'must be <= 50' }])

/** Headers the error handler sets for a type, beyond X-Request-Id. */
const problemHeaders: Partial<Record<ProblemType, Record<string, object>>> = {
  unauthorized: {
    'WWW-Authenticate': {
      description: 'RFC 6750 challenge: `Bearer realm="listing-service"`, with `error="invalid_token"` for a bad token.',
      schema: { type: 'string' },
    },
  },
  'rate-limited': {
    'Retry-After': {
      description:
        'Seconds to wait (at least 1): until the rate-limit window resets, or, for a create refused because your ' +
        'creates already wait on too many images, until those checks have surely ended (IMAGE_FETCH_TIMEOUT_MS).',
      schema: { type: 'integer', minimum: 1 },
      example: 12,
    },
  },
}

/** On every response of an operation that can answer 429, but its 401: an unauthenticated request has no budget. */
const rateLimitHeaders: Record<string, object> = {
  'RateLimit-Policy': {
    description:
      'The quota: `q` requests per `w` seconds per provider. Absent when RATE_LIMIT_PER_MINUTE is 0, or when the ' +
      'counter store does not answer (requests are then served without limit).',
    schema: { type: 'string' },
    example: '"default";q=600;w=60',
  },
  RateLimit: {
    description: 'What is left of the quota: `r` requests remaining, `t` seconds until the window resets. Absent when RateLimit-Policy is.',
    schema: { type: 'string' },
    example: '"default";r=599;t=60',
  },
}

const rateLimitHeaderRefs = Object.fromEntries(Object.keys(rateLimitHeaders).map((name) => [name, { $ref: `#/components/headers/${name}` }]))

/** The parts of an OpenAPI 3.1 document this module reads and writes. */
interface Response {
  description: string
  headers?: Record<string, object>
  content?: Record<string, object>
}
interface Operation {
  requestBody?: object
  responses?: Record<string, Response>
  'x-problems'?: readonly ProblemType[]
}
export interface OpenApiDocument {
  components?: Record<string, Record<string, object> | undefined>
  paths?: Record<string, Record<string, Operation> | undefined>
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** Each example is written once in `componentExamples` (components.examples) and referred to. */
function problemResponse(types: ProblemType[], operation: Operation, componentExamples: Record<string, object>): Response {
  const examples: Record<string, object> = {}
  for (const type of types) {
    const ofQuery = type === 'invalid-request' && !operation.requestBody
    const name = ofQuery ? `${type}-query` : type
    componentExamples[name] ??= { summary: problemTypes[type].title, value: (ofQuery ? queryExample : problemExamples[type]).toBody() }
    examples[type] = { $ref: `#/components/examples/${name}` }
  }
  const response: Response = {
    description: types.map((type) => `\`/problems/${type}\`: ${problemTypes[type].description}`).join('\n\n'),
    content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/Problem' }, examples } },
  }
  const headers = types.reduce<Record<string, object>>((all, type) => ({ ...all, ...problemHeaders[type] }), {})
  if (Object.keys(headers).length > 0) response.headers = headers
  return response
}

/** @fastify/swagger `transformObject`: each operation's `x-problems` become its error responses; every response gets X-Request-Id. */
export function addProblemResponses(document: OpenApiDocument): void {
  const components = (document.components ??= {})
  const examples = (components.examples ??= {})
  components.headers = {
    ...components.headers,
    'X-Request-Id': {
      description: 'Yours when you sent one of 1–128 visible ASCII characters, generated otherwise; quote it when reporting a problem.',
      schema: { type: 'string' },
    },
    ...rateLimitHeaders,
  }
  for (const pathItem of Object.values(document.paths ?? {})) {
    for (const method of HTTP_METHODS) {
      const operation = pathItem?.[method]
      if (!operation) continue
      const responses = (operation.responses ??= {})
      const problems = operation['x-problems'] ?? []
      const byStatus = new Map<number, ProblemType[]>()
      for (const type of problems) {
        const { status } = problemTypes[type]
        byStatus.set(status, [...(byStatus.get(status) ?? []), type])
      }
      delete operation['x-problems']
      for (const [status, types] of byStatus) responses[status] = problemResponse(types, operation, examples)
      for (const [status, response] of Object.entries(responses)) {
        response.headers = {
          'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
          ...(problems.includes('rate-limited') && status !== String(problemTypes.unauthorized.status) ? rateLimitHeaderRefs : {}),
          ...response.headers,
        }
      }
    }
  }
}
