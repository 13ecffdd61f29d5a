import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { systemClock, type Clock } from './clock.js'
import type { Config } from './config.js'
import type { Database } from './db/connection.js'
import { errorHandler, invalidRequest, notFoundHandler, Problem } from './errors.js'
import { AccessLog } from './http/access-log.js'
import { healthRoutes } from './http/health.js'
import { documentBearerAuth, registerOpenApi } from './http/openapi.js'
import { createAjv, validatorCompiler } from './http/validation.js'
import { anyAddress, publicAddressesOnly } from './images/address-policy.js'
import type { ImageCheck } from './images/check.js'
import { ImageProber } from './images/prober.js'
import { ListingRepository } from './listings/repository.js'
import { listingRoutes } from './listings/routes.js'
import { authenticate } from './providers/authenticate.js'
import { ProviderRepository } from './providers/repository.js'
import { limiterFromSettings } from './rate-limit/limiter.js'

export interface AppDependencies {
  config: Config
  database: Database
  clock?: Clock
  /** Replaces the image prober built from config (tests use it to pass a prober with their own resolver). */
  checkImages?: ImageCheck
  /** A pino logger; none means silent (tests). */
  logger?: FastifyBaseLogger
  rateLimit?: {
    /** Redis key prefix for the counters (tests isolate themselves on a shared Redis). */
    keyPrefix?: string
    /** Called each time the counter store fails and a request is served without limit (metrics). */
    onStoreError?: (error: Error) => void
  }
}

/** Request bodies above this are refused with 413 before they are read (contract §5). */
export const BODY_LIMIT_BYTES = 1024 * 1024

// Contract §4: a client's X-Request-Id is echoed when it is at most 128 visible ASCII characters.
const CLIENT_REQUEST_ID = /^[\x21-\x7E]{1,128}$/

/** Builds the whole service on a migrated database. Never listens: server.ts does, tests use inject(). */
export async function buildApp(deps: AppDependencies): Promise<FastifyInstance> {
  const { config, database } = deps
  const clock = deps.clock ?? systemClock
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: BODY_LIMIT_BYTES,
    logController: new AccessLog(),
    genReqId(request) {
      const sent = request.headers['x-request-id']
      return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID()
    },
  })

  app.setValidatorCompiler(validatorCompiler(createAjv()))
  app.setErrorHandler(errorHandler)
  app.setNotFoundHandler(notFoundHandler)
  app.decorateRequest('provider', null)

  // JSON is the only body type; anything else is 415. JSON.parse keeps "__proto__" as an ordinary own key,
  // which validation then rejects as an unknown field, so it can never reach an object's prototype.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // JSON is UTF-8 (RFC 8259 §8.1); a body declared in another charset would be misread, so it is refused.
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(request.headers['content-type'] ?? '')?.[1]
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
      done(new Problem('unsupported-media-type', 'Content-Type must be application/json in UTF-8'), undefined)
      return
    }
    try {
      done(null, JSON.parse(body as string))
    } catch (error) {
      done(invalidRequest([{ pointer: '', detail: `is not valid JSON: ${(error as Error).message}` }]), undefined)
    }
  })

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })

  // First, so that the document generator sees every route registered after it.
  await registerOpenApi(app)
  await app.register(healthRoutes, { database })

  let checkImages = deps.checkImages
  if (!checkImages) {
    const prober = new ImageProber({
      maxBytes: config.IMAGE_MAX_BYTES,
      timeoutMs: config.IMAGE_FETCH_TIMEOUT_MS,
      policy: config.IMAGE_ALLOW_PRIVATE_NETWORKS ? anyAddress : publicAddressesOnly,
      clock,
    })
    app.addHook('onClose', () => prober.close())
    checkImages = prober.check
  }

  const providers = new ProviderRepository(database)
  const listings = new ListingRepository(database)
  const limiter = limiterFromSettings({
    limit: config.RATE_LIMIT_PER_MINUTE,
    redisUrl: config.REDIS_URL,
    clock,
    ...deps.rateLimit,
  })
  if (limiter) {
    app.addHook('onReady', limiter.ready)
    app.addHook('onClose', limiter.close)
  }
  await app.register(
    async (api) => {
      api.addHook('onRequest', authenticate(providers, clock))
      // After authentication: the budget is the provider's, and a 401 costs none of it.
      if (limiter) api.addHook('onRequest', limiter.onRequest)
      api.addHook('onRoute', documentBearerAuth)
      // Its own 404 handler keeps unknown /api/v1 paths behind authentication too.
      api.setNotFoundHandler(notFoundHandler)
      await api.register(listingRoutes, {
        listings,
        clock,
        create: {
          listings,
          clock,
          checkImages,
          ttlSeconds: {
            timed: config.LISTING_TTL_TIMED_SECONDS,
            priority_timed: config.LISTING_TTL_PRIORITY_TIMED_SECONDS,
          },
        },
      })
    },
    { prefix: '/api/v1' },
  )
  return app
}
