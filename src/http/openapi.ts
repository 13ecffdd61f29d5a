import { readFileSync } from 'node:fs'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, RouteOptions } from 'fastify'
import { Type, type TSchema } from 'typebox'
import { componentSchemas, isNamed, ref } from './components.js'
import { addProblemResponses, type OpenApiDocument } from './problem-responses.js'

const BEARER = 'bearerAuth'

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

const description = `Restaurants, bakeries and shops post time-limited discounted listings (a brand, a location, a
discount and 1–100 items named in Arabic and English) and page through their own listings.

**Authentication.** Every \`/api/v1\` operation needs \`Authorization: Bearer lst_…\`. A token is printed once
by \`listing-service provider create\`, \`listing-service token create\` or \`listing-service marketplace create\`
and can be revoked with \`listing-service token revoke\`. A missing, malformed, unknown or revoked token is \`401\`.

**Errors.** Every error is \`application/problem+json\` (RFC 9457, the \`Problem\` schema). \`errors[]\` lists
every problem found, not only the first: \`pointer\` is a JSON Pointer into the request body, \`parameter\` names
a query parameter. A path no route serves is \`404\` \`/problems/not-found\`; under \`/api/v1\` the token is checked
first, so without a valid one such a path answers \`401\`.

**Retries.** \`referenceId\` makes a create safe to retry: the same body again answers \`200\` with the original
listing; a different body with the same \`referenceId\` is \`409\`.

**Rate limits.** Each provider may send \`RATE_LIMIT_PER_MINUTE\` requests (600 by default) to \`/api/v1\` per
60-second window; beyond that the answer is \`429\` with \`Retry-After\` (seconds). Responses after authentication
carry \`RateLimit-Policy\` and \`RateLimit\` (draft-ietf-httpapi-ratelimit-headers): the quota, and what is left of
it with the seconds until the window resets. A create is also \`429\` when its images would not be checked within
\`IMAGE_FETCH_TIMEOUT_MS\`, judged by the images your creates already wait on and how long your images take to
fetch, or when your creates already wait on \`IMAGE_QUEUE_PER_PROVIDER\` images (2048 by default) and it would go
over; nothing is fetched, and its \`Retry-After\` is \`IMAGE_FETCH_TIMEOUT_MS\` in seconds, by when every create
waiting has ended.

**Request ids.** Every response carries \`X-Request-Id\`: the one you sent (1–128 visible ASCII characters), or a
generated one.`

/** A JSON success response with its description, named examples and headers. A named schema is referred to, not repeated. */
export function jsonResponse<Schema extends TSchema>(description: string, schema: Schema, examples: Record<string, unknown>, headers?: Record<string, object>) {
  const named = Object.fromEntries(Object.entries(examples).map(([name, value]) => [name, { value }]))
  const written = (isNamed(schema) ? ref(schema) : schema) as Schema
  return { description, content: { 'application/json': { schema: written, examples: named } }, ...(headers ? { headers } : {}) }
}

/** 304 to a conditional GET. The generator reads `type: 'null'` as no content. */
export function notModifiedResponse(etag: string) {
  return {
    type: 'null',
    description: 'Not modified: `If-None-Match` names the current representation. No body; the ETag is repeated.',
    headers: { ETag: { type: 'string', description: 'The current ETag.', examples: [etag] } },
  }
}

/** 204, typed as no payload so that `reply.code(204).send()` type-checks. */
export function noContentResponse(description: string) {
  return Type.Unsafe<undefined>({ type: 'null', description })
}

export const listingEtagHeader = {
  ETag: {
    type: 'string',
    description: 'The listing’s version in quotes, e.g. `"3"`: what `If-Match` names to change exactly this version.',
    examples: ['"3"'],
  },
}

/** onRoute hook for the routes behind authenticate() and the rate limiter. */
export function documentBearerAuth(route: RouteOptions): void {
  // A route that serves one kind of client answers a valid token of the other kind with 403.
  const forOneKind = route.config?.principal !== 'any'
  route.schema = {
    ...route.schema,
    security: [{ [BEARER]: [] }],
    'x-problems': ['unauthorized', ...(forOneKind ? (['forbidden'] as const) : []), 'rate-limited', ...(route.schema?.['x-problems'] ?? [])],
  }
}

/** Registers the generator (before any route, so that it sees them all), /openapi.json and /docs. */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  for (const schema of componentSchemas()) app.addSchema(schema)
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'listing-service', version, description },
      servers: [{ url: '/', description: 'The host that served this document' }],
      tags: [
        { name: 'listings', description: 'Create, read, change and withdraw your listings; page through them' },
        { name: 'events', description: 'Every change of your listings or reservations, as a feed to pull (providers and marketplaces)' },
        {
          name: 'webhooks',
          description: 'Every change of your listings or reservations, pushed to your endpoints as signed webhooks (providers and marketplaces)',
        },
        { name: 'images', description: 'Photos you upload, hosted and served by the service for your listings' },
        { name: 'discovery', description: 'For marketplaces: every provider’s active listings near a point' },
        { name: 'reservations', description: 'Marketplaces hold, confirm and release units of a listing; providers see and cancel those on theirs' },
        { name: 'operations', description: 'Probes for load balancers and orchestrators; no token needed' },
      ],
      components: {
        securitySchemes: {
          [BEARER]: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'lst_ followed by 43 base64url characters',
            description:
              '`Authorization: Bearer lst_…`, a provider’s token from `listing-service provider create` or `token create`, or a ' +
              'marketplace’s from `listing-service marketplace create`. The event feed and webhooks serve both kinds; discovery ' +
              'serves marketplaces, every other route providers. A token of the other kind than a route serves is `403`.',
          },
        },
      },
    },
    // OpenAPI 3.1 is JSON Schema 2020-12: `const` stays as the validator reads it.
    convertConstToEnum: false,
    // Shared schemas keep their names as components (the default numbers them def-0, def-1, …).
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    transformObject: (document) => {
      if (!('openapiObject' in document)) return document.swaggerObject
      addProblemResponses(document.openapiObject as OpenApiDocument)
      return document.openapiObject
    },
  })
  await app.register(swaggerUi, { routePrefix: '/docs', theme: { title: 'listing-service API' } })
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}
