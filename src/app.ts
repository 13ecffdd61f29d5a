import { randomUUID } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { systemClock, type Clock } from './clock.js'
import type { Config } from './config.js'
import type { Database } from './db/connection.js'
import { ReadYourWrites } from './db/read-your-writes.js'
import { errorHandler, frameworkErrorHandler, notFoundHandler } from './errors.js'
import { AccessLog } from './http/access-log.js'
import { answerClientError } from './http/client-errors.js'
import { registerCompression } from './http/compression.js'
import { addDrainHooks, Drain } from './http/drain.js'
import { healthRoutes } from './http/health.js'
import { checkHost } from './http/host-header.js'
import { registerJsonBody } from './http/json-body.js'
import { answerWrongMethods } from './http/method-not-allowed.js'
import { assertBodyFits } from './http/json-bounds.js'
import { registerMetrics } from './http/metrics-route.js'
import { noStoreWhenAuthenticated } from './http/private-answers.js'
import { documentBearerAuth, registerOpenApi } from './http/openapi.js'
import { createAjv, validatorCompiler } from './http/validation.js'
import { anyAddress, publicAddressesOnly } from './images/address-policy.js'
import type { ImageCheck } from './images/check.js'
import { ImageProber } from './images/prober.js'
import { serviceAddress, withHostedImages } from './images/hosted-check.js'
import { openImageStore, type ImageStore } from './images/image-store.js'
import { DecodeSlots } from './images/process-image.js'
import { serveImageRoutes } from './images/serve-routes.js'
import { uploadRoutes } from './images/upload-routes.js'
import { Uploads } from './images/uploads.js'
import { ListingCreates } from './listings/create-listing.js'
import { ListingRepository } from './listings/repository.js'
import { CursorCodec } from './discovery/cursor.js'
import { DiscoveryRepository } from './discovery/repository.js'
import { discoveryRoutes } from './discovery/routes.js'
import { ListingHolds } from './reservations/holds.js'
import { ReservationRepository } from './reservations/repository.js'
import { reservationRoutes } from './reservations/routes.js'
import { Representations } from './listings/representations.js'
import { EventFeed } from './events/feed.js'
import { eventRoutes } from './events/routes.js'
import { WebhookRepository } from './webhooks/repository.js'
import { webhookRoutes } from './webhooks/routes.js'
import { oneListingRoutes } from './listings/one-listing-routes.js'
import { listingRoutes } from './listings/routes.js'
import { Metrics } from './metrics.js'
import { authenticate } from './providers/authenticate.js'
import { ProviderRepository } from './providers/repository.js'
import { addressKey, limiterFromSettings } from './rate-limit/limiter.js'
import { consolePlugin, isConsolePath } from './console/plugin.js'
import { setSecurityHeaders } from './console/security-headers.js'
import { overHttpsRule } from './http/over-https.js'

export interface AppDependencies {
  config: Config
  database: Database
  clock?: Clock
  /** Replaces the image prober built from config (tests pass one with their own resolver). */
  checkImages?: ImageCheck
  /** Replaces the store IMAGE_STORE_URL names. */
  imageStore?: ImageStore
  /** None: silent. */
  logger?: FastifyBaseLogger
  /** The process's metrics, also given to openDatabase. */
  metrics?: Metrics
  /** Shutdown state the caller drives; none: one nobody drains. */
  drain?: Drain
  rateLimit?: {
    /** Tests isolate themselves on a shared Redis. */
    keyPrefix?: string
    /** Called each time the store fails and a request is served without limit. */
    onStoreError?: (error: Error) => void
  }
}

/** How often Node looks for requests past their timeouts: its default would let a slow client overstay by that much. */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1000

/** Larger bodies are 413, refused before they are read. */
const BODY_LIMIT_BYTES = 1024 * 1024

/** What the kept representations of listings may take: a listing of 100 items is about 20 KB. */
const REPRESENTATIONS_BYTES = 32 * 1024 * 1024

const CLIENT_REQUEST_ID = /^[\x21-\x7E]{1,128}$/

const isApiPath = (url: string) => url === '/api/v1' || url.startsWith('/api/v1/') || url.startsWith('/api/v1?')

/** The routes anyone may call without a token, besides the health probes. */
const isPublicDocumentRoute = (url: string | undefined) =>
  url !== undefined && (url === '/openapi.json' || url === '/metrics' || url === '/docs' || url.startsWith('/docs/'))

/** Builds the whole service on a migrated database. Never listens: tests use inject(). */
export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const { config, database } = deps
  const clock = deps.clock ?? systemClock
  const metrics = deps.metrics ?? new Metrics()
  const drain = deps.drain ?? new Drain()
  const overHttps = overHttpsRule(config)
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: BODY_LIMIT_BYTES,
    // The request timeout bounds receiving a request, never answering it: a create may wait for its images.
    http: {
      headersTimeout: config.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
      // checkHost refuses it as problem+json instead of Node's bare 400.
      requireHostHeader: false,
    },
    // Fastify sets these two on the server after creating it, over `http`.
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
    clientErrorHandler: answerClientError,
    frameworkErrors(error, request, reply) {
      // A console path the router cannot decode is still answered as the console answers: with its headers.
      if (isConsolePath(request.url)) setSecurityHeaders(request, reply, overHttps(request))
      frameworkErrorHandler(error, request, reply)
    },
    // Room for a referenceId of 255 characters, percent-encoded as UTF-8.
    routerOptions: { maxParamLength: 4096 },
    logController: new AccessLog(),
    // Its 503 is not problem+json: addDrainHooks answers instead.
    return503OnClosing: false,
    genReqId(request) {
      const sent = request.headers['x-request-id']
      return typeof sent === 'string' && sent.length <= 128 && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID()
    },
  })

  app.setValidatorCompiler(validatorCompiler(createAjv()))
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler)
  app.decorateRequest('principal', null)
  app.decorateRequest('provider', null)

  // A route whose body schema nests deeper than the body parser allows fails at start-up.
  app.addHook('onRoute', (route) => assertBodyFits(`${String(route.method)} ${route.url}`, route.schema?.body))
  registerJsonBody(app)

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
  app.addHook('onRequest', checkHost)
  app.addHook('onSend', noStoreWhenAuthenticated)
  addDrainHooks(app, drain)
  const refuseWrongMethod = answerWrongMethods(app)
  app.addHook('onRequest', async function (request, reply) {
    if (!isApiPath(request.url)) await refuseWrongMethod.call(this, request, reply)
  })

  // Before any route: compression applies to the routes registered after it, /docs' assets included.
  await registerCompression(app)
  // In this instance's memory, never Redis: a coarse guard against one address hammering the routes without a
  // token, which need no shared exact count. The health probes stay free for orchestrators.
  const publicLimiter = limiterFromSettings({ limit: config.PUBLIC_RATE_LIMIT_PER_MINUTE, redisUrl: undefined, clock, keyOf: addressKey })
  if (publicLimiter) {
    app.addHook('onClose', publicLimiter.close)
    app.addHook('onRequest', async (request, reply) => {
      if (isPublicDocumentRoute(request.routeOptions.url)) await publicLimiter.onRequest.call(app, request, reply)
    })
  }
  await registerOpenApi(app)
  registerMetrics(app, metrics, { route: config.METRICS_PORT === undefined })
  await app.register(healthRoutes, { database })

  let checkImages = deps.checkImages
  if (!checkImages) {
    const prober = new ImageProber({
      maxBytes: config.IMAGE_MAX_BYTES,
      timeoutMs: config.IMAGE_FETCH_TIMEOUT_MS,
      queuePerProvider: config.IMAGE_QUEUE_PER_PROVIDER,
      policy: config.IMAGE_ALLOW_PRIVATE_NETWORKS ? anyAddress : publicAddressesOnly,
      clock,
      observer: metrics.imageProbes,
      onRefusedHost: (detail) => app.log.info({ detail }, 'image host refused'),
    })
    app.addHook('onClose', () => prober.close())
    metrics.watchImageWork(() => prober.work())
    checkImages = prober.check
  }
  const uploads = new Uploads(database)
  const imageStore = deps.imageStore ?? (await openImageStore(config))
  const address = serviceAddress(config, () => (app.server.listening ? (app.server.address() as AddressInfo).port : undefined))
  checkImages = drain.bound(withHostedImages(checkImages, uploads, address.origins, clock))
  await app.register(serveImageRoutes, { store: imageStore, clock })

  const providers = new ProviderRepository(database)
  // DATABASE_READ_URL: the provider's reads and discovery's candidates on the standby.
  const reads = database.replica && new ReadYourWrites(database.kysely, database.replica, metrics.countReplicaRead)
  const listings = new ListingRepository(database, reads)
  const limiter = limiterFromSettings({
    limit: config.RATE_LIMIT_PER_MINUTE,
    redisUrl: config.REDIS_URL,
    clock,
    keyPrefix: deps.rateLimit?.keyPrefix,
    onStoreError(error) {
      metrics.countRateLimitStoreError(error)
      deps.rateLimit?.onStoreError?.(error)
    },
  })
  if (limiter) {
    app.addHook('onReady', limiter.ready)
    app.addHook('onClose', limiter.close)
  }
  // Before the API: its cookie hook runs ahead of the API's authentication.
  await app.register(consolePlugin, { database, clock, config, publicLimit: publicLimiter?.onRequest })
  await app.register(
    async (api) => {
      api.addHook('onRequest', authenticate(providers, clock))
      api.addHook('onRequest', refuseWrongMethod)
      // After authentication: the budget is the provider's, and a 401 costs none of it.
      if (limiter) api.addHook('onRequest', limiter.onRequest)
      api.addHook('onRoute', documentBearerAuth)
      // Its own 404 handler keeps unknown /api/v1 paths behind authentication too.
      api.setNotFoundHandler(notFoundHandler)
      // Pages and discovery keep the listings they send here, each in its own form.
      const representations = new Representations(REPRESENTATIONS_BYTES)
      await api.register(listingRoutes, {
        listings,
        representations,
        clock,
        create: {
          listings,
          creates: new ListingCreates(database.transact),
          clock,
          checkImages,
          ttlSeconds: {
            timed: config.LISTING_TTL_TIMED_SECONDS,
            priority_timed: config.LISTING_TTL_PRIORITY_TIMED_SECONDS,
          },
        },
      })
      await api.register(uploadRoutes, {
        uploads,
        store: imageStore,
        slots: new DecodeSlots(config.IMAGE_UPLOADS_IN_FLIGHT, config.IMAGE_FETCH_TIMEOUT_MS),
        limits: { maxBytes: config.IMAGE_MAX_BYTES, maxPixels: config.IMAGE_MAX_PIXELS, maxEdge: config.IMAGE_MAX_EDGE },
        clock,
        baseUrl: address.baseUrl,
      })
      await api.register(oneListingRoutes, { listings, transact: database.transact, clock })
      await api.register(eventRoutes, { feed: new EventFeed(database, reads) })
      await api.register(webhookRoutes, {
        webhooks: new WebhookRepository(database),
        clock,
        policy: config.WEBHOOK_ALLOW_PRIVATE_NETWORKS ? anyAddress : publicAddressesOnly,
      })
      // The marketplace route (config.principal); the feed and webhooks serve both kinds, every other route providers.
      const discovery = new DiscoveryRepository(database, reads)
      app.addHook('onClose', () => discovery.close())
      const cursors = await CursorCodec.of(database)
      await api.register(discoveryRoutes, {
        discovery,
        representations,
        cursors,
        clock,
      })
      await api.register(reservationRoutes, {
        reservations: new ReservationRepository(database.kysely),
        holds: new ListingHolds(database.transact),
        transact: database.transact,
        cursors,
        clock,
        holdSeconds: config.RESERVATION_HOLD_SECONDS,
      })
    },
    { prefix: '/api/v1' },
  )
  return app
}
