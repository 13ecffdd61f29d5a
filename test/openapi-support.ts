import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { after, before } from 'node:test'
import SQLite from 'better-sqlite3'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { inTransaction, openDatabase, type Database } from '../src/db/connection.js'
import type { ProblemType } from '../src/errors.js'
import { createAjv } from '../src/http/validation.js'
import { MarketplaceRepository } from '../src/providers/marketplaces.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { fixtureImages, item, listingBody } from './fixtures.js'
import { startService, type Response, type TestService } from './helper.js'
import { phonePhoto } from './image-files.js'

// What the openapi-*.test.ts files share. They check GET /openapi.json and GET /docs (docs/api.md): the document
// is valid OpenAPI 3.1, its examples are what the service accepts and answers, and every route and every error a
// route can answer with is in it. The document does not depend on the dialect, so each file uses one SQLite
// service.

export const CREATE = 'POST /api/v1/listing/create'
export const LIST = 'GET /api/v1/listing'
export const ONE = 'GET /api/v1/listing/{listingId}'
export const BY_REFERENCE = 'GET /api/v1/listing/by-reference/{referenceId}'
export const PATCH = 'PATCH /api/v1/listing/{listingId}'
export const WITHDRAW = 'POST /api/v1/listing/{listingId}/withdraw'
export const EVENTS = 'GET /api/v1/events'
export const WEBHOOK_CREATE = 'POST /api/v1/webhooks'
export const WEBHOOK_LIST = 'GET /api/v1/webhooks'
export const WEBHOOK_ONE = 'GET /api/v1/webhooks/{webhookId}'
export const WEBHOOK_DELETE = 'DELETE /api/v1/webhooks/{webhookId}'
export const WEBHOOK_ROTATE = 'POST /api/v1/webhooks/{webhookId}/rotate-secret'
export const WEBHOOK_ENABLE = 'POST /api/v1/webhooks/{webhookId}/enable'
export const WEBHOOK_DELIVERIES = 'GET /api/v1/webhooks/{webhookId}/deliveries'
/** The webhook routes that name an endpoint, each as its method and a path to one (`:id`). */
export const WEBHOOK_ROUTES_OF_ONE: Array<[route: string, method: string, path: string]> = [
  [WEBHOOK_ONE, 'GET', '/api/v1/webhooks/:id'],
  [WEBHOOK_DELETE, 'DELETE', '/api/v1/webhooks/:id'],
  [WEBHOOK_ROTATE, 'POST', '/api/v1/webhooks/:id/rotate-secret'],
  [WEBHOOK_ENABLE, 'POST', '/api/v1/webhooks/:id/enable'],
  [WEBHOOK_DELIVERIES, 'GET', '/api/v1/webhooks/:id/deliveries'],
]
export const UNKNOWN_WEBHOOK = `wh_${'0'.repeat(26)}`
export const WEBHOOK_BODY = { url: 'https://pos.example.com/hooks/listings' }
export const DISCOVER = 'GET /api/v1/discover'
export const RESERVE = 'POST /api/v1/reservations'
export const RESERVATIONS = 'GET /api/v1/reservations'
export const RESERVATION = 'GET /api/v1/reservations/{reservationId}'
export const CONFIRM = 'POST /api/v1/reservations/{reservationId}/confirm'
export const RELEASE = 'POST /api/v1/reservations/{reservationId}/release'
export const CANCEL = 'POST /api/v1/reservations/{reservationId}/cancel'
export const STOCK = 'GET /api/v1/listing/{listingId}/stock'
/** The routes that serve marketplace tokens only. */
export const FOR_MARKETPLACES = new Set([DISCOVER, RESERVE, CONFIRM, RELEASE])
/** The routes that serve provider and marketplace tokens alike. */
export const FOR_BOTH_KINDS = new Set([
  EVENTS,
  WEBHOOK_CREATE,
  WEBHOOK_LIST,
  ...WEBHOOK_ROUTES_OF_ONE.map(([route]) => route),
  RESERVATIONS,
  RESERVATION,
  CANCEL,
  STOCK,
])
/** Where aListing's listings are (listingBody's location): discovery provocations look there. */
export const DISCOVER_PATH = '/api/v1/discover?latitude=24.7136&longitude=46.6753'
export const UPLOAD = 'POST /api/v1/images'
export const IMAGE = 'GET /images/{file}'
export const READY = 'GET /readyz'
export const METRICS = 'GET /metrics'
export const ONE_MIB = 1024 * 1024

// The document is walked generically; `any` keeps that readable.
export type Document = any

export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']

/** Every operation of the document as "METHOD /path" with the operation itself. */
export function operationsOf(document: Document): Array<[route: string, operation: any]> {
  return Object.entries(document.paths ?? {}).flatMap(([path, item]: [string, any]) =>
    HTTP_METHODS.filter((method) => item[method]).map((method): [string, any] => [`${method.toUpperCase()} ${path}`, item[method]]),
  )
}

/** Every example of a media type object: `example` and each `examples` entry's `value`, by name. */
export function examplesOf(media: any): Array<[name: string, value: unknown]> {
  const examples: Array<[string, unknown]> = Object.entries(media.examples ?? {}).map(([name, example]: [string, any]) => [name, example.value])
  if (media.example !== undefined) examples.push(['example', media.example])
  return examples
}

// The service's own Ajv: the same custom formats and the exact multipleOf its validator uses.
export const ajv = createAjv()

/** Asserts that `value` matches `schema`, a schema of the dereferenced document. */
export function assertMatches(schema: object, value: unknown, context: string): void {
  const check = ajv.compile(schema)
  // Ajv fills defaults in what it validates: the value itself stays as it is.
  assert.ok(check(structuredClone(value)), `${context}: ${ajv.errorsText(check.errors)}`)
}

/**
 * Every route the app serves, as "METHOD /path", read from Fastify's route tree (it has no other public list):
 * each line is a path segment indented four characters per level, with its methods in parentheses.
 */
export function registeredRoutes(app: FastifyInstance): string[] {
  const segments: string[] = []
  const routes: string[] = []
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (.*?)(?: \(([^)]*)\))?$/.exec(line)
    if (!match) continue
    segments.length = (match[1] as string).length / 4
    segments.push(match[2] as string)
    for (const method of (match[3] ?? '').split(', ')) {
      // As the document writes paths: `:listingId` is `{listingId}`.
      if (/^[A-Z]+$/.test(method)) routes.push(`${method} ${segments.join('').replace(/:(\w+)/g, '{$1}')}`)
    }
  }
  return routes
}

/**
 * One file's service (SQLite) and the document it serves: started before the file's tests, closed after them.
 * `document` is filled in before the first test runs.
 */
export function documentedService(): { service: TestService; document: Document } {
  const setup: { service: TestService; document: Document } = { service: {} as TestService, document: undefined }
  before(async () => {
    Object.assign(setup.service, await startService('sqlite'))
    setup.document = await fetchDocument(setup.service)
  })
  after(() => setup.service.close())
  return setup
}

export async function fetchDocument(service: TestService): Promise<Document> {
  // No token: the document is public.
  const response = await service.request('GET', '/openapi.json')
  assert.equal(response.status, 200, response.text)
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
  return response.body
}

// ---- the error statuses each route can answer with ---------------------------------------------------------------

export interface Provocation {
  route: string
  send(service: TestService, token: string): Promise<Response>
  /** Puts the service in the state the problem needs first (a broken database, a drain); such a provocation gets a service of its own. */
  prepare?(service: TestService, token: string): Promise<void>
  /** Configuration for a service of its own. */
  env?: Record<string, string>
}

export const withImage = (url: string) => listingBody({ brand: { ...listingBody().brand, imageUrl: url } })

/**
 * A provocation sent while the service's reads fail at once. Readers wait for nobody in WAL mode; out of it,
 * another connection's exclusive lock stops them, and without busy_timeout they fail instead of waiting.
 */
export function whileLockedOut(route: string, send: Provocation['send']): Provocation {
  let lockHolder: SQLite.Database | undefined
  return {
    route,
    async prepare(service) {
      await sql`pragma journal_mode = delete`.execute(service.database.kysely)
      await sql`pragma busy_timeout = 0`.execute(service.database.kysely)
      lockHolder = new SQLite(service.databaseUrl.slice('sqlite:'.length))
      lockHolder.exec('begin exclusive')
    },
    async send(service, token) {
      try {
        return await send(service, token)
      } finally {
        lockHolder?.close()
      }
    },
  }
}

/**
 * Rows made for a service whose database a provocation is about to break, on a connection of their own on this
 * thread, closed before the provocation: SQLite leaves WAL mode (whileLockedOut) only for the one connection that
 * has the file open, and the service's writer thread, once started by a write, keeps the file's WAL locks even
 * after it closes (while another connection of the process has the file open).
 */
async function outsideTheService<T>(service: TestService, make: (database: Database) => Promise<T>): Promise<T> {
  const other = openDatabase(service.databaseUrl)
  try {
    const onThisThread = inTransaction(other.kysely)
    return await make({ ...other, writer: other.kysely, transact: onThisThread, transactBackground: onThisThread })
  } finally {
    await other.close()
  }
}

/** The provocation with the service's marketplace token made before its own preparation (which may lock the database). */
export function marketplaceFirst(provocation: Provocation): Provocation {
  return {
    ...provocation,
    async prepare(service, token) {
      const made = outsideTheService(service, (database) => new MarketplaceRepository(database).create('marketplace', service.clock()))
      marketplaceTokens.set(
        service,
        made.then((marketplace) => marketplace.token),
      )
      await made
      await provocation.prepare?.(service, token)
    },
  }
}

/** A listing of the provider with `token`, its id and referenceId. */
export async function aListing(service: TestService, token: string): Promise<{ id: string; referenceId: string }> {
  const body = listingBody({}, 2)
  const created = await service.create(token, body)
  assert.equal(created.status, 201, created.text)
  return { id: created.body.listingId, referenceId: body.referenceId }
}

export const UNKNOWN_LISTING = '0'.repeat(26)

/** POST /api/v1/images with `bytes` as a JPEG. */
export const uploadImage = (service: TestService, token: string | undefined, bytes: Buffer | string, type = 'image/jpeg') =>
  service.request('POST', '/api/v1/images', { token, raw: bytes, headers: { 'content-type': type } })

/** An image the provider with `token` uploaded: its file name (`img_….jpg`). */
export async function anImage(service: TestService, token: string): Promise<string> {
  const uploaded = await uploadImage(service, token, await phonePhoto(48, 32))
  assert.equal(uploaded.status, 201, uploaded.text)
  return new URL(uploaded.body.url).pathname.slice('/images/'.length)
}

/** A webhook endpoint of the provider with `token`: its id. */
export async function anEndpoint(service: TestService, token: string): Promise<string> {
  const created = await service.request('POST', '/api/v1/webhooks', { token, json: WEBHOOK_BODY })
  assert.equal(created.status, 201, created.text)
  return created.body.id
}

/** A request to a webhook route of one endpoint. */
export const toEndpoint = (service: TestService, token: string | undefined, method: string, path: string, id: string) =>
  service.request(method, path.replace(':id', id), { token })

/** One marketplace token per service: discovery is the one route a provider's token cannot use (403). */
export const marketplaceTokens = new WeakMap<TestService, Promise<string>>()
export function marketplaceToken(service: TestService): Promise<string> {
  let token = marketplaceTokens.get(service)
  if (!token) marketplaceTokens.set(service, (token = service.newMarketplace().then((marketplace) => marketplace.token)))
  return token
}

/** The token a request to `route` is sent with: the service's marketplace token on a marketplace's route, else `token`. */
export const tokenFor = async (service: TestService, route: string, token: string) => (FOR_MARKETPLACES.has(route) ? marketplaceToken(service) : token)

export const UNKNOWN_RESERVATION = `rsv_${'0'.repeat(26)}`

/** A hold's body: `quantity` units of the listing's first item, under a referenceId of its own. */
export const holdBody = (listingId: string, quantity = 1, holdSeconds?: number) => ({
  listingId,
  referenceId: `basket-${randomUUID()}`,
  items: [{ position: 0, quantity }],
  ...(holdSeconds === undefined ? {} : { holdSeconds }),
})

/** POST /api/v1/reservations by the marketplace with `token`. */
export const hold = (service: TestService, token: string | undefined, body: Record<string, unknown>) =>
  service.request('POST', '/api/v1/reservations', { token, json: body })

/** `action` (confirm, release, cancel) of the reservation `id`. */
export const endReservation = (service: TestService, token: string | undefined, action: string, id: string, headers: Record<string, string> = {}) =>
  service.request('POST', `/api/v1/reservations/${id}/${action}`, { token, headers })

/**
 * A reservation the service's marketplace holds (one unit for `holdSeconds`, or the default) of a new listing of the
 * provider with `token`: its id, its listing's id and the marketplace's token.
 */
export async function aReservation(service: TestService, token: string, holdSeconds?: number): Promise<{ id: string; listingId: string; marketplace: string }> {
  const { id: listingId } = await aListing(service, token)
  const marketplace = await marketplaceToken(service)
  const held = await hold(service, marketplace, holdBody(listingId, 1, holdSeconds))
  assert.equal(held.status, 201, held.text)
  return { id: held.body.id, listingId, marketplace }
}

/**
 * The marketplace routes: a request each by `token`, with an id that names nothing. A provider's token here is
 * refused (403).
 */
export const forMarketplaces: Record<string, (service: TestService, token: string | undefined) => Promise<Response>> = {
  [DISCOVER]: (service, token) => service.request('GET', DISCOVER_PATH, { token }),
  [RESERVE]: (service, token) => hold(service, token, holdBody(UNKNOWN_LISTING)),
  [CONFIRM]: (service, token) => endReservation(service, token, 'confirm', UNKNOWN_RESERVATION),
  [RELEASE]: (service, token) => endReservation(service, token, 'release', UNKNOWN_RESERVATION),
}

/**
 * The routes every request of which needs a token: a request each, by `token` (none: no Authorization header),
 * that a provider with a listing may send. Their 401 and 429 provocations are made from it.
 */
export const authenticated: Record<string, (service: TestService, token: string | undefined) => Promise<Response>> = {
  [CREATE]: (service, token) => service.request('POST', '/api/v1/listing/create', { token, json: listingBody() }),
  [LIST]: (service, token) => service.request('GET', '/api/v1/listing', { token }),
  [ONE]: (service, token) => service.request('GET', `/api/v1/listing/${UNKNOWN_LISTING}`, { token }),
  [BY_REFERENCE]: (service, token) => service.request('GET', '/api/v1/listing/by-reference/unknown', { token }),
  [PATCH]: (service, token) => service.request('PATCH', `/api/v1/listing/${UNKNOWN_LISTING}`, { token, json: { items: [{ position: 0, quantity: 1 }] } }),
  [WITHDRAW]: (service, token) => service.request('POST', `/api/v1/listing/${UNKNOWN_LISTING}/withdraw`, { token }),
  [EVENTS]: (service, token) => service.request('GET', '/api/v1/events', { token }),
  [WEBHOOK_CREATE]: (service, token) => service.request('POST', '/api/v1/webhooks', { token, json: WEBHOOK_BODY }),
  [WEBHOOK_LIST]: (service, token) => service.request('GET', '/api/v1/webhooks', { token }),
  [UPLOAD]: async (service, token) => uploadImage(service, token, await phonePhoto(40, 30)),
  ...Object.fromEntries(
    WEBHOOK_ROUTES_OF_ONE.map(([route, method, path]) => [
      route,
      (service: TestService, token: string | undefined) => toEndpoint(service, token, method, path, UNKNOWN_WEBHOOK),
    ]),
  ),
  [RESERVATIONS]: (service, token) => service.request('GET', '/api/v1/reservations', { token }),
  [RESERVATION]: (service, token) => service.request('GET', `/api/v1/reservations/${UNKNOWN_RESERVATION}`, { token }),
  [CANCEL]: (service, token) => endReservation(service, token, 'cancel', UNKNOWN_RESERVATION),
  [STOCK]: (service, token) => service.request('GET', `/api/v1/listing/${UNKNOWN_LISTING}/stock`, { token }),
  // Discovery, holds, confirms and releases are a marketplace's: a request that has a token sends the service's
  // marketplace token instead.
  ...Object.fromEntries(
    Object.entries(forMarketplaces).map(([route, send]) => [
      route,
      async (service: TestService, token: string | undefined) => send(service, token === undefined ? undefined : await marketplaceToken(service)),
    ]),
  ),
}

/** Without a token: 401 from every authenticated route. */
export const unauthorizedEverywhere = (): Provocation[] =>
  Object.entries(authenticated).map(([route, send]) => ({ route, send: (service) => send(service, undefined) }))

/** A budget of one request: a first one spends it (whatever it answers but 429), the second is refused. */
export const rateLimitedEverywhere = (): Provocation[] =>
  Object.entries(authenticated).map(([route, send]) => ({
    route,
    env: { RATE_LIMIT_PER_MINUTE: '1' },
    async send(service, token) {
      assert.notEqual((await send(service, token)).status, 429)
      return send(service, token)
    },
  }))

/** A column the route reads, renamed: the route then fails with an unexpected error. */
export const renameColumn = (table: string, column: string) => (service: TestService) =>
  sql`alter table ${sql.ref(table)} rename column ${sql.ref(column)} to ${sql.ref(`${column}_gone`)}`.execute(service.database.kysely).then(() => {})

/**
 * A write sent while another connection holds SQLite's write lock past busy_timeout (5 s): writes wait on the
 * writer thread, then give up. Reads are not stopped by a writer in WAL mode, so this provokes writes only.
 */
export function whileWriteLocked(route: string, send: (service: TestService, token: string, listingId: string) => Promise<Response>): Provocation {
  let lockHolder: SQLite.Database | undefined
  let listingId = ''
  return {
    route,
    async prepare(service, token) {
      listingId = (await aListing(service, token)).id
      lockHolder = new SQLite(service.databaseUrl.slice('sqlite:'.length))
      lockHolder.exec('begin immediate')
    },
    async send(service, token) {
      try {
        return await send(service, token, listingId)
      } finally {
        lockHolder?.close()
      }
    },
  }
}

/**
 * Real values for the parameters of `route` that name things: a listing of the provider with `token` (with units
 * to spare), its first event, a reservation the service's marketplace holds of it, and a cursor of the route's
 * query (`query`, its examples).
 */
export async function realParameters(service: TestService, token: string, route: string, query: URLSearchParams): Promise<Record<string, string>> {
  const body = listingBody({ items: [item(0, { quantity: 5 }), item(1, { quantity: 5 })] })
  const created = await service.create(token, body)
  assert.equal(created.status, 201, created.text)
  const id: string = created.body.listingId
  await aListing(service, token)
  const events = await service.request('GET', '/api/v1/events', { token })
  // Two held of the second item, which PATCH's example leaves as it is; a hold's example takes the first.
  const marketplace = await marketplaceToken(service)
  const reservations: string[] = []
  for (let k = 0; k < 2; k++) {
    const held = await hold(service, marketplace, { listingId: id, referenceId: `basket-${randomUUID()}`, items: [{ position: 1, quantity: 1 }] })
    assert.equal(held.status, 201, held.text)
    reservations.push(held.body.id)
  }
  // A cursor continues the query it came from (the route's examples), one item per page.
  let cursor
  if (route === RESERVATIONS) {
    const params = new URLSearchParams(query)
    params.set('listingId', id)
    const page = await service.request('GET', `/api/v1/reservations?${params}&limit=1`, { token })
    cursor = page.body?.nextCursor
  } else {
    const discovered = await service.request('GET', `/api/v1/discover?${query}&limit=1`, { token: marketplace })
    cursor = discovered.body?.nextCursor
  }
  return {
    listingId: id,
    referenceId: body.referenceId,
    after: events.body.data[0].id,
    cursor,
    webhookId: await anEndpoint(service, token),
    file: await anImage(service, token),
    reservationId: reservations[0] as string,
  }
}

/** A table every create writes (its event): without it a create fails with an unexpected error. */
export const dropItems = (service: TestService) => sql`drop table events`.execute(service.database.kysely).then(() => {})

/** A column every non-empty page reads (its listings' items): renamed, a page fails unexpectedly. */
export const renamePageColumn = renameColumn('listings', 'items_record')

/** The routes that read a JSON body, each as its method and a path to it. */
const BODY_ROUTES: Array<[route: string, method: string, path: string]> = [
  [CREATE, 'POST', '/api/v1/listing/create'],
  [PATCH, 'PATCH', `/api/v1/listing/${UNKNOWN_LISTING}`],
  [WEBHOOK_CREATE, 'POST', '/api/v1/webhooks'],
  // Withdraw takes no body but an empty one, and reads it as any route does.
  [WITHDRAW, 'POST', `/api/v1/listing/${UNKNOWN_LISTING}/withdraw`],
]

/** The reservation routes that read a body: a hold's, and the actions', which take none but an empty one. */
const RESERVATION_BODY_ROUTES: Array<[route: string, method: string, path: string]> = [
  [RESERVE, 'POST', '/api/v1/reservations'],
  [CONFIRM, 'POST', `/api/v1/reservations/${UNKNOWN_RESERVATION}/confirm`],
  [RELEASE, 'POST', `/api/v1/reservations/${UNKNOWN_RESERVATION}/release`],
  [CANCEL, 'POST', `/api/v1/reservations/${UNKNOWN_RESERVATION}/cancel`],
]

/**
 * How to make each route answer with each problem type it can answer with. Keyed by every problem type, so a new
 * type does not compile here until the test knows which routes answer with it; the test then checks that the
 * document describes exactly these, no more and no fewer.
 */
export const provocations: Record<ProblemType, Provocation[]> = {
  'invalid-request': [
    { route: CREATE, send: (service, token) => service.create(token, {}) },
    { route: LIST, send: (service, token) => service.list(token, '?limit=51') },
    { route: PATCH, send: (service, token) => service.request('PATCH', `/api/v1/listing/${UNKNOWN_LISTING}`, { token, json: {} }) },
    {
      route: WITHDRAW,
      send: (service, token) => service.request('POST', `/api/v1/listing/${UNKNOWN_LISTING}/withdraw`, { token, json: { reason: 'x' } }),
    },
    { route: EVENTS, send: (service, token) => service.request('GET', '/api/v1/events?limit=0', { token }) },
    { route: WEBHOOK_CREATE, send: (service, token) => service.request('POST', '/api/v1/webhooks', { token, json: { url: 'ftp://x' } }) },
    // An id longer than any endpoint's.
    ...WEBHOOK_ROUTES_OF_ONE.map(([route, method, path]) => ({
      route,
      send: (service: TestService, token: string) => toEndpoint(service, token, method, path, `wh_${'0'.repeat(100)}`),
    })),
    { route: DISCOVER, send: async (service) => service.request('GET', `${DISCOVER_PATH}&limit=0`, { token: await marketplaceToken(service) }) },
    // A truncated photo.
    { route: UPLOAD, send: async (service, token) => uploadImage(service, token, (await phonePhoto(64, 48)).subarray(0, 400)) },
    { route: RESERVE, send: async (service) => hold(service, await marketplaceToken(service), {}) },
    { route: RESERVATIONS, send: (service, token) => service.request('GET', '/api/v1/reservations?limit=0', { token }) },
    // A body where an action takes none.
    ...[CONFIRM, RELEASE, CANCEL].map((route) => ({
      route,
      send: async (service: TestService, token: string) =>
        service.request('POST', `/api/v1/reservations/${UNKNOWN_RESERVATION}/${route.split('/').at(-1) as string}`, {
          token: await tokenFor(service, route, token),
          json: { reason: 'x' },
        }),
    })),
    // A malformed If-None-Match on the conditional reads.
    ...[ONE, BY_REFERENCE].map((route) => ({
      route,
      send: (service: TestService, token: string) => {
        const path = route === ONE ? `/api/v1/listing/${UNKNOWN_LISTING}` : '/api/v1/listing/by-reference/x'
        return service.request('GET', path, { token, headers: { 'if-none-match': 'garbage' } })
      },
    })),
  ],
  'image-unavailable': [{ route: CREATE, send: (service, token) => service.create(token, withImage(fixtureImages.url('/status/404'))) }],
  unauthorized: unauthorizedEverywhere(),
  // A token of the other kind than the route serves: a marketplace's on every provider route, a provider's on
  // the marketplace routes. The feed, webhooks and the reservation routes for both serve both kinds: never 403.
  forbidden: Object.entries(authenticated)
    .filter(([route]) => !FOR_BOTH_KINDS.has(route))
    .map(([route, send]) => ({
      route,
      send: async (service, token) => {
        const ofMarketplaces = forMarketplaces[route]
        return ofMarketplaces ? ofMarketplaces(service, token) : send(service, await marketplaceToken(service))
      },
    })),
  'not-found': [
    ...[ONE, PATCH, WITHDRAW, BY_REFERENCE, ...WEBHOOK_ROUTES_OF_ONE.map(([route]) => route), RESERVE, RESERVATION, CONFIRM, RELEASE, CANCEL, STOCK].map(
      (route) => ({
        route,
        send: (service: TestService, token: string) => authenticated[route]!(service, token),
      }),
    ),
    { route: IMAGE, send: (service) => service.request('GET', `/images/img_${'0'.repeat(24)}.jpg`) },
  ],
  // Answered by the connection before any route (test/hostile.test.ts provokes them).
  'request-timeout': [],
  'request-headers-too-large': [],
  // Answered before any route, for a path asked with a method it does not have (test/http-errors.test.ts).
  'method-not-allowed': [],
  conflict: [
    {
      route: CREATE,
      async send(service, token) {
        const first = listingBody()
        assert.equal((await service.create(token, first)).status, 201)
        return service.create(token, { ...first, location: { latitude: 0, longitude: 0 } })
      },
    },
    {
      route: WEBHOOK_CREATE,
      async send(service, token) {
        for (let i = 0; i < 10; i++) await anEndpoint(service, token)
        return service.request('POST', '/api/v1/webhooks', { token, json: WEBHOOK_BODY })
      },
    },
    // The same referenceId with another body.
    {
      route: RESERVE,
      async send(service, token) {
        const { id } = await aListing(service, token)
        const marketplace = await marketplaceToken(service)
        const first = holdBody(id)
        assert.equal((await hold(service, marketplace, first)).status, 201)
        return hold(service, marketplace, { ...first, holdSeconds: 60 })
      },
    },
  ],
  'insufficient-stock': [
    // aListing's items have one unit each.
    {
      route: RESERVE,
      async send(service, token) {
        const { id } = await aListing(service, token)
        return hold(service, await marketplaceToken(service), holdBody(id, 2))
      },
    },
    {
      route: PATCH,
      async send(service, token) {
        const { listingId } = await aReservation(service, token)
        return service.request('PATCH', `/api/v1/listing/${listingId}`, { token, json: { items: [{ position: 0, quantity: 0 }] } })
      },
    },
  ],
  'reservation-expired': [
    {
      route: CONFIRM,
      async send(service, token) {
        const { id, marketplace } = await aReservation(service, token, 30)
        service.clock.now += 30_000
        return endReservation(service, marketplace, 'confirm', id)
      },
    },
  ],
  'reservation-closed': [
    // Confirming a released one; releasing a confirmed one.
    ...(
      [
        [CONFIRM, 'release', 'confirm'],
        [RELEASE, 'confirm', 'release'],
      ] as const
    ).map(([route, first, then]) => ({
      route,
      async send(service: TestService, token: string) {
        const { id, marketplace } = await aReservation(service, token)
        assert.equal((await endReservation(service, marketplace, first, id)).status, 200)
        return endReservation(service, marketplace, then, id)
      },
    })),
  ],
  'listing-closed': [
    {
      route: RESERVE,
      async send(service, token) {
        const { id } = await aListing(service, token)
        assert.equal((await service.request('POST', `/api/v1/listing/${id}/withdraw`, { token })).status, 200)
        return hold(service, await marketplaceToken(service), holdBody(id))
      },
    },
    {
      route: PATCH,
      async send(service, token) {
        const { id } = await aListing(service, token)
        assert.equal((await service.request('POST', `/api/v1/listing/${id}/withdraw`, { token })).status, 200)
        return service.request('PATCH', `/api/v1/listing/${id}`, { token, json: { items: [{ position: 0, quantity: 3 }] } })
      },
    },
    {
      route: WITHDRAW,
      async send(service, token) {
        const { id } = await aListing(service, token)
        service.clock.now += service.config.LISTING_TTL_TIMED_SECONDS * 1000
        return service.request('POST', `/api/v1/listing/${id}/withdraw`, { token })
      },
    },
  ],
  'precondition-failed': [
    {
      route: PATCH,
      async send(service, token) {
        const { id } = await aListing(service, token)
        return service.request('PATCH', `/api/v1/listing/${id}`, {
          token,
          json: { items: [{ position: 0, quantity: 3 }] },
          headers: { 'if-match': '"2"' },
        })
      },
    },
    {
      route: WITHDRAW,
      async send(service, token) {
        const { id } = await aListing(service, token)
        return service.request('POST', `/api/v1/listing/${id}/withdraw`, { token, headers: { 'if-match': '"2"' } })
      },
    },
    ...(
      [
        [CONFIRM, 'confirm'],
        [RELEASE, 'release'],
        [CANCEL, 'cancel'],
      ] as const
    ).map(([route, action]) => ({
      route,
      async send(service: TestService, token: string) {
        const { id, marketplace } = await aReservation(service, token)
        return endReservation(service, route === CANCEL ? token : marketplace, action, id, { 'if-match': '"2"' })
      },
    })),
  ],
  'payload-too-large': [...BODY_ROUTES, ...RESERVATION_BODY_ROUTES].map(([route, method, path]) => ({
    route,
    send: async (service, token) =>
      service.request(method, path, {
        token: await tokenFor(service, route, token),
        raw: JSON.stringify(listingBody()).padEnd(ONE_MIB + 1),
        headers: { 'content-type': 'application/json' },
      }),
  })),
  'image-too-large': [
    { route: CREATE, send: (service, token) => service.create(token, withImage(fixtureImages.url('/size/6000000'))) },
    { route: UPLOAD, send: (service, token) => uploadImage(service, token, Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.alloc(5 * ONE_MIB)])) },
  ],
  'unsupported-media-type': [
    ...[...BODY_ROUTES, ...RESERVATION_BODY_ROUTES].map(([route, method, path]) => ({
      route,
      send: async (service: TestService, token: string) =>
        service.request(method, path, {
          token: await tokenFor(service, route, token),
          raw: JSON.stringify(listingBody()),
          headers: { 'content-type': 'text/plain' },
        }),
    })),
    { route: UPLOAD, send: (service, token) => uploadImage(service, token, 'a photo', 'text/plain') },
  ],
  'unsupported-image-format': [
    { route: CREATE, send: (service, token) => service.create(token, withImage(fixtureImages.url('/tiny.pdf'))) },
    { route: UPLOAD, send: (service, token) => uploadImage(service, token, '%PDF-1.4 not a photo', 'image/png') },
  ],
  'rate-limited': rateLimitedEverywhere(),
  internal: [
    { route: CREATE, prepare: dropItems, send: (service, token) => service.create(token, listingBody()) },
    {
      route: LIST,
      async prepare(service, token) {
        assert.equal((await service.create(token, listingBody())).status, 201)
        await renamePageColumn(service)
      },
      send: (service, token) => service.list(token),
    },
    ...[ONE, BY_REFERENCE, PATCH, WITHDRAW].map((route): Provocation => {
      // The listing made before renaming a column it needs.
      let listing = { id: '', referenceId: '' }
      return {
        route,
        async prepare(service, token) {
          listing = await aListing(service, token)
          await renameColumn('listings', 'items_record')(service)
        },
        send: (service, token) => {
          const { id, referenceId } = listing
          if (route === BY_REFERENCE) return service.request('GET', `/api/v1/listing/by-reference/${referenceId}`, { token })
          if (route === ONE) return service.request('GET', `/api/v1/listing/${id}`, { token })
          if (route === PATCH) return service.request('PATCH', `/api/v1/listing/${id}`, { token, json: { items: [{ position: 0, quantity: 3 }] } })
          return service.request('POST', `/api/v1/listing/${id}/withdraw`, { token })
        },
      }
    }),
    {
      route: EVENTS,
      async prepare(service, token) {
        await aListing(service, token)
        await renameColumn('events', 'snapshot')(service)
      },
      send: (service, token) => service.request('GET', '/api/v1/events', { token }),
    },
    ...[WEBHOOK_CREATE, WEBHOOK_LIST].map((route) => ({
      route,
      prepare: renameColumn('webhook_endpoints', 'url'),
      send: (service: TestService, token: string) => authenticated[route]!(service, token),
    })),
    // Each reads or returns the endpoint's url; a delete removes its log, whose table loses a column here.
    ...WEBHOOK_ROUTES_OF_ONE.map(([route, method, path]): Provocation => {
      let endpoint = ''
      return {
        route,
        async prepare(service, token) {
          endpoint = await anEndpoint(service, token)
          await (route === WEBHOOK_DELETE ? renameColumn('webhook_attempts', 'endpoint_id') : renameColumn('webhook_endpoints', 'url'))(service)
        },
        send: (service, token) => toEndpoint(service, token, method, path, endpoint),
      }
    }),
    {
      route: DISCOVER,
      async prepare(service, token) {
        await aListing(service, token)
        await renameColumn('listings', 'items_record')(service)
      },
      send: async (service) => service.request('GET', DISCOVER_PATH, { token: await marketplaceToken(service) }),
    },
    { route: UPLOAD, prepare: renameColumn('images', 'upload_hash'), send: (service, token) => authenticated[UPLOAD]!(service, token) },
    // A hold writes the reservation's items; a page and a read select them.
    ...[RESERVE, RESERVATIONS, RESERVATION].map((route): Provocation => {
      let listingId = ''
      return {
        route,
        async prepare(service, token) {
          listingId = (await aListing(service, token)).id
          await renameColumn('reservations', 'items_record')(service)
        },
        send: async (service, token) =>
          route === RESERVE ? hold(service, await marketplaceToken(service), holdBody(listingId)) : authenticated[route]!(service, token),
      }
    }),
    // An action finds the reservation's listing first: a marketplace in its index, a provider in its reservations.
    ...[CONFIRM, RELEASE].map((route) => ({
      route,
      prepare: renameColumn('marketplace_reservations', 'listing_id'),
      send: (service: TestService, token: string) => authenticated[route]!(service, token),
    })),
    { route: CANCEL, prepare: renameColumn('reservations', 'listing_id'), send: (service, token) => authenticated[CANCEL]!(service, token) },
    { route: STOCK, prepare: renamePageColumn, send: (service, token) => authenticated[STOCK]!(service, token) },
    // A file the store cannot read: a folder where the image was.
    ((): Provocation => {
      let image = ''
      return {
        route: IMAGE,
        async prepare(service, token) {
          image = await anImage(service, token)
          const folder = join(service.config.IMAGE_STORE_URL.slice('file:'.length), image)
          rmSync(folder)
          mkdirSync(folder)
        },
        send: (service) => service.request('GET', `/images/${image}`),
      }
    })(),
  ],
  unavailable: [
    // A create's first step, the referenceId lookup, is a read on the request's connection (its write would wait
    // on the writer thread for busy_timeout, 5 s, before answering the same 503).
    whileLockedOut(CREATE, (service, token) => service.create(token, listingBody())),
    whileLockedOut(LIST, (service, token) => service.list(token)),
    whileLockedOut(ONE, (service, token) => service.request('GET', `/api/v1/listing/${UNKNOWN_LISTING}`, { token })),
    whileLockedOut(BY_REFERENCE, (service, token) => service.request('GET', '/api/v1/listing/by-reference/x', { token })),
    whileLockedOut(EVENTS, (service, token) => service.request('GET', '/api/v1/events', { token })),
    whileLockedOut(WEBHOOK_LIST, (service, token) => service.request('GET', '/api/v1/webhooks', { token })),
    // Reads fail at once; writes (create, delete, rotate, enable) wait busy_timeout on the writer thread first.
    ...[WEBHOOK_CREATE, ...WEBHOOK_ROUTES_OF_ONE.map(([route]) => route)].map((route) =>
      whileLockedOut(route, (service, token) => authenticated[route]!(service, token)),
    ),
    marketplaceFirst(whileLockedOut(DISCOVER, async (service) => service.request('GET', DISCOVER_PATH, { token: await marketplaceToken(service) }))),
    ...[RESERVATIONS, RESERVATION, STOCK].map((route) => whileLockedOut(route, (service, token) => authenticated[route]!(service, token))),
    // Holds and actions are writes: they wait busy_timeout on the writer thread, then give up.
    marketplaceFirst(whileWriteLocked(RESERVE, async (service, _token, listingId) => hold(service, await marketplaceToken(service), holdBody(listingId)))),
    ...[CONFIRM, RELEASE].map((route) => marketplaceFirst(whileWriteLocked(route, (service, token) => authenticated[route]!(service, token)))),
    whileWriteLocked(CANCEL, (service, token) => authenticated[CANCEL]!(service, token)),
    whileWriteLocked(PATCH, (service, token, id) =>
      service.request('PATCH', `/api/v1/listing/${id}`, { token, json: { items: [{ position: 0, quantity: 3 }] } }),
    ),
    whileWriteLocked(WITHDRAW, (service, token, id) => service.request('POST', `/api/v1/listing/${id}/withdraw`, { token })),
    whileWriteLocked(UPLOAD, (service, token) => authenticated[UPLOAD]!(service, token)),
    {
      route: READY,
      prepare: (service) => service.database.close(),
      send: (service) => service.request('GET', '/readyz'),
    },
    // During a shutdown drain every route but /healthz answers 503; the API routes and /readyz are provoked above.
    {
      route: METRICS,
      prepare: async (service) => service.drain.start(),
      send: (service) => service.request('GET', '/metrics'),
    },
  ],
}

/** Whether `provoke` starts a service of its own for it: it breaks the database or needs its own configuration. */
export const onItsOwnService = (provocation: Provocation): boolean => provocation.prepare !== undefined || provocation.env !== undefined

/** Sends a provocation, on the file's service or on one of its own (`onItsOwnService`). */
export async function provoke(service: TestService, provocation: Provocation): Promise<Response> {
  if (!onItsOwnService(provocation)) return provocation.send(service, (await service.newProvider()).token)
  const own = await startService('sqlite', { env: provocation.env })
  try {
    const { token } = (await outsideTheService(own, (database) => new ProviderRepository(database).create({ name: 'provoked' }, own.clock()))).token
    await provocation.prepare?.(own, token)
    return await provocation.send(own, token)
  } finally {
    // Closing a database twice is harmless; the readiness provocation has already closed it.
    await own.close()
  }
}
