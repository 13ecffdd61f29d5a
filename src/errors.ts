import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { Type, type Static } from 'typebox'
import { isDatabaseCorrupt, isDatabaseUnavailable } from './db/dialect.js'
import { named, ref } from './http/components.js'
import { closeAfterLinger } from './http/linger.js'

/** Every error the API returns, by its RFC 9457 `type`; `description` goes in the OpenAPI document. */
export const problemTypes = {
  'invalid-request': {
    status: 400,
    title: 'Invalid request',
    description:
      'The body is not JSON, nests deeper than any route accepts (4 levels) or holds more than 20,000 values, or fields, query parameters or headers break ' +
      'the schema; `errors[]` names every one. Also a request without a Host header, with two, or with one that is not a host (RFC 9112 §3.2), and an ' +
      'If-Match or If-None-Match over 1,024 characters. An uploaded image that does not decode whole, or has more than IMAGE_MAX_PIXELS pixels.',
  },
  'image-unavailable': {
    status: 400,
    title: 'Image unavailable',
    description:
      'An image could not be fetched: DNS failure, refused, a non-2xx answer, more than 3 redirects, over ' +
      "IMAGE_FETCH_TIMEOUT_MS (which bounds the whole wait for a create's images, waiting for a free fetch " +
      'included), or a forbidden (private) address; or an image url of this service names no image you uploaded. `errors[]` points at every failing image.',
  },
  unauthorized: {
    status: 401,
    title: 'Unauthorized',
    description: 'The Authorization header is missing or malformed, or names an unknown or revoked token.',
  },
  forbidden: {
    status: 403,
    title: 'Forbidden',
    description: 'The token is valid but of the other kind: a marketplace token on a provider route, or a provider token on a marketplace route.',
  },
  'not-found': {
    status: 404,
    title: 'Not found',
    description:
      'No route has this method and path, or none of your listings, reservations, events or webhook endpoints has this id ' +
      '(another provider’s are as unknown as ids that do not exist), or no image has this name.',
  },
  // Answered before any route sees the request (answerClientError).
  'request-timeout': {
    status: 408,
    title: 'Request timeout',
    description:
      'The headers took longer than HTTP_HEADERS_TIMEOUT_MS, or the whole request longer than HTTP_REQUEST_TIMEOUT_MS, to arrive; the connection is closed.',
  },
  'request-headers-too-large': {
    status: 431,
    title: 'Request header fields too large',
    description: "The request's headers are over the server's limit; the connection is closed.",
  },
  'method-not-allowed': {
    status: 405,
    title: 'Method not allowed',
    description: 'The path exists, but not with this method; the Allow header lists the methods it has.',
  },
  conflict: {
    status: 409,
    title: 'Conflict',
    description:
      'The referenceId is already used by one of your listings (or reservations) with a different body; or you already have the ' +
      'most webhook endpoints an owner may have (10).',
  },
  'listing-closed': {
    status: 409,
    title: 'Listing closed',
    description: 'The listing is expired or withdrawn: it can no longer change (an expired one cannot be withdrawn either).',
  },
  'insufficient-stock': {
    status: 409,
    title: 'Insufficient stock',
    description:
      'A reservation asks for more units than are available now: `errors[]` names each short line (`/items/<k>/quantity`) with its `available`, and ' +
      'nothing is held. Or a PATCH would lower a quantity below the units reservations hold: `errors[]` names each such item with its `held`.',
  },
  'reservation-expired': {
    status: 409,
    title: 'Reservation expired',
    description: 'The reservation’s hold ran out (now ≥ expiresAt) before it was confirmed: its units are free again. Make a new one.',
  },
  'reservation-closed': {
    status: 409,
    title: 'Reservation closed',
    description:
      'The reservation has ended in a way this action cannot follow: confirming a released or cancelled one, releasing a confirmed or cancelled one (cancel a confirmed one instead).',
  },
  'precondition-failed': {
    status: 412,
    title: 'Precondition failed',
    description:
      'If-Match names a version that is not the listing’s (or the reservation’s) current one: nothing changed. Read it again ' +
      '(its ETag is the current version) and decide anew.',
  },
  'payload-too-large': { status: 413, title: 'Payload too large', description: 'The request body is over 1 MiB.' },
  'image-too-large': {
    status: 413,
    title: 'Image too large',
    description: 'An image, fetched or uploaded, is larger than IMAGE_MAX_BYTES (5 MiB by default). `errors[]` points at every failing image.',
  },
  'unsupported-media-type': {
    status: 415,
    title: 'Unsupported media type',
    description:
      'The request Content-Type is not application/json (in UTF-8; for an upload, not image/jpeg, image/png, image/webp or image/gif), or the body is in a content coding (any ' +
      'Content-Encoding but identity) or a transfer coding other than chunked: none is decoded.',
  },
  'unsupported-image-format': {
    status: 415,
    title: 'Unsupported image format',
    description: 'An image, fetched or uploaded, is not JPEG, PNG, GIF or WebP, judged by its first bytes. `errors[]` points at every failing image.',
  },
  'rate-limited': {
    status: 429,
    title: 'Too many requests',
    description:
      'Over RATE_LIMIT_PER_MINUTE requests from your provider; or, on a create, its images would not be checked within IMAGE_FETCH_TIMEOUT_MS behind ' +
      'those your creates already wait on, or those are IMAGE_QUEUE_PER_PROVIDER images already (nothing is fetched or stored). Retry after Retry-After seconds.',
  },
  internal: {
    status: 500,
    title: 'Internal server error',
    description: 'An unexpected error. The body says nothing of internals; quote the X-Request-Id when reporting it.',
  },
  unavailable: {
    status: 503,
    title: 'Service unavailable',
    description:
      'The database is unavailable (down, unreachable, not answering within a few seconds, out of disk or connections, locked or read-only), or this ' +
      'instance is shutting down, or it has more uploads to decode than it takes at once. Retry after Retry-After seconds, or on another instance. Repeating a create with the same referenceId is safe: nothing was ' +
      'stored, unless the connection broke just after the database committed, and then the repeat is answered as a replay.',
  },
} as const

export type ProblemType = keyof typeof problemTypes

const ProblemDetailSchema = Type.Object(
  {
    pointer: Type.Optional(
      Type.String({
        description: 'RFC 6901 JSON Pointer into the request body ("" is the body itself); set for body problems.',
        examples: ['/items/3/price'],
      }),
    ),
    parameter: Type.Optional(
      Type.String({
        description: 'Name of the offending query or path parameter; set for problems with the URL.',
        examples: ['limit'],
      }),
    ),
    header: Type.Optional(Type.String({ description: 'Name of the offending request header; set for header problems.', examples: ['If-Match'] })),
    available: Type.Optional(Type.Integer({ description: 'insufficient-stock of a reservation: the units of this line’s item available now.' })),
    held: Type.Optional(Type.Integer({ description: 'insufficient-stock of a PATCH: the units of this item reservations hold.' })),
    detail: Type.String({ description: 'What is wrong with it, in English.', examples: ['must be >= 1'] }),
  },
  { description: 'One problem found: `pointer`, `parameter` or `header` says where, `detail` says what.' },
)
named('ProblemDetail', ProblemDetailSchema)
export type ProblemDetail = Static<typeof ProblemDetailSchema>

const problemTypeList = Object.entries(problemTypes)
  .map(([type, { status }]) => `\`/problems/${type}\` (${status})`)
  .join(', ')

const ProblemSchema = Type.Object(
  {
    success: Type.Literal(false),
    type: Type.String({
      description: `Identifies the kind of problem: ${problemTypeList}.`,
      examples: ['/problems/invalid-request'],
    }),
    title: Type.String({ description: 'Short summary of the problem type; the same for every occurrence.' }),
    status: Type.Integer({ description: 'The HTTP status code of this response.' }),
    detail: Type.String({ description: 'What went wrong this time, in English.' }),
    errors: Type.Optional(
      Type.Array(ref(ProblemDetailSchema), {
        description: 'Every problem found, not only the first (validation, conflicts, image checks).',
      }),
    ),
  },
  { description: 'RFC 9457 problem details, sent as application/problem+json.' },
)
named('Problem', ProblemSchema)
type ProblemBody = Static<typeof ProblemSchema>

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

/** An error meant to reach the client as it is. */
export class Problem extends Error {
  readonly type: ProblemType
  readonly errors: ProblemDetail[] | undefined
  readonly headers: Record<string, string>

  constructor(type: ProblemType, detail: string, options: { errors?: ProblemDetail[]; headers?: Record<string, string> } = {}) {
    super(detail)
    this.type = type
    this.errors = options.errors
    this.headers = options.headers ?? {}
  }

  get status(): number {
    return problemTypes[this.type].status
  }

  toBody(): ProblemBody {
    const body: ProblemBody = {
      success: false,
      type: `/problems/${this.type}`,
      title: problemTypes[this.type].title,
      status: this.status,
      detail: this.message,
    }
    if (this.errors) body.errors = this.errors
    return body
  }
}

/** A 400 listing every problem found, counted in the summary. */
export function invalidRequest(errors: ProblemDetail[]): Problem {
  const detail = errors.length === 1 ? '1 field is invalid' : `${errors.length} fields are invalid`
  return new Problem('invalid-request', detail, { errors })
}

/** A 404 naming the path parameter that names nothing the caller may see. */
export function notFoundParameter(parameter: string, detail: string): Problem {
  return new Problem('not-found', detail, { errors: [{ parameter, detail }] })
}

/** A 409: the referenceId names one of the caller's listings (or reservations) made with another body. */
export function referenceConflict(of: 'listings' | 'reservations'): Problem {
  return new Problem('conflict', `referenceId is already used by one of your ${of} with a different body`, {
    errors: [{ pointer: '/referenceId', detail: 'is already used with a different body' }],
  })
}

/** A 412: `If-Match` names another version than the current one, which goes back as the ETag. */
export function preconditionFailed(version: number): Problem {
  return new Problem('precondition-failed', `If-Match does not name the current version "${version}"`, { headers: { etag: `"${version}"` } })
}

/** Errors Fastify raises before our code runs, as problem types. */
function fromFastifyError(error: FastifyError): Problem | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new Problem('unsupported-media-type', 'Content-Type must be application/json')
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new Problem('payload-too-large', 'request body is larger than 1 MiB')
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return invalidRequest([{ pointer: '', detail: 'body must be a JSON object, not empty' }])
  }
  // Anything else Fastify blames on the client stays a 400.
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return invalidRequest([{ pointer: '', detail: error.message }])
  }
  return undefined
}

/** A declared body never read (an error before parsing): keeping the connection would mean reading it for a refused client. */
function bodyLeftUnread(request: FastifyRequest): boolean {
  const { 'transfer-encoding': chunked, 'content-length': length } = request.headers
  return (chunked !== undefined || (length !== undefined && length !== '0')) && request.body === undefined
}

export function sendProblem(request: FastifyRequest, reply: FastifyReply, problem: Problem): FastifyReply {
  if (bodyLeftUnread(request)) {
    reply.header('connection', 'close')
    closeAfterLinger(request.raw.socket)
  }
  return reply.code(problem.status).headers(problem.headers).type(PROBLEM_CONTENT_TYPE).send(problem.toBody())
}

/** A restart or failover takes seconds; sooner retries would only add load while the database recovers. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5

export function errorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const problem = error instanceof Problem ? error : fromFastifyError(error)
  if (problem) return sendProblem(request, reply, problem)
  // The body says nothing of internals; the log line, found by request id, says everything.
  if (isDatabaseUnavailable(error)) {
    request.log.warn({ err: error }, 'database unavailable')
    const headers = { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) }
    return sendProblem(request, reply, new Problem('unavailable', 'the database is unavailable; retry after Retry-After seconds', { headers }))
  }
  // Loudest level: only an operator can repair it.
  if (isDatabaseCorrupt(error)) request.log.fatal({ err: error }, 'database corruption detected')
  else request.log.error({ err: error }, 'unhandled error')
  return sendProblem(request, reply, new Problem('internal', 'an unexpected error occurred; quote the X-Request-Id'))
}

export function notFoundHandler(request: FastifyRequest, reply: FastifyReply) {
  return sendProblem(request, reply, new Problem('not-found', `no route for ${request.method} ${request.url.split('?')[0]}`))
}

/**
 * Fastify's frameworkErrors: a path parameter the router cannot read (bad percent-encoding, too long). Such a path
 * names nothing, so the answer is the 404 an unknown id gets, before any hook, with an X-Request-Id.
 */
export function frameworkErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  reply.header('x-request-id', request.id)
  const why = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'a path segment is too long' : 'a path segment is not valid percent-encoding'
  void sendProblem(request, reply, new Problem('not-found', `the path names nothing: ${why}`))
}
