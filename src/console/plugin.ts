import { fastifyCookie } from '@fastify/cookie'
import fastifyStatic from '@fastify/static'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import { Type } from 'typebox'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { Database } from '../db/connection.js'
import { Problem, sendProblem } from '../errors.js'
import { overHttpsRule } from '../http/over-https.js'
import { unauthorized } from '../providers/authenticate.js'
import { ASSETS_DIR, readManifest } from './assets.js'
import { hasCsrfProof, PROVIDER_HEADER, SessionCookie } from './cookie.js'
import { consolePage, preferredLanguage } from './page.js'
import { setSecurityHeaders } from './security-headers.js'
import { ConsoleSessions } from './sessions.js'

export interface ConsoleOptions {
  database: Database
  clock: Clock
  config: Pick<Config, 'PUBLIC_BASE_URL' | 'TRUST_PROXY' | 'CONSOLE_SESSION_MAX_HOURS'>
  /** The public routes' limit by client address, for the routes that take a credential without a session. */
  publicLimit?: onRequestAsyncHookHandler
}

const Credential = Type.String({ maxLength: 200 })

const SignInBody = Type.Object({ token: Type.Optional(Credential), link: Type.Optional(Credential) }, { additionalProperties: false })

const LinkBody = Type.Object({ link: Credential }, { additionalProperties: false })

const refused = () => new Problem('unauthorized', 'the token or sign-in link is unknown, revoked, spent or expired, or not a provider’s')
const signedOut = () => new Problem('unauthorized', 'not signed in, or the session has ended')
const noCsrfProof = () => new Problem('forbidden', 'console requests must carry the X-Console-Session: 1 header')
const unknownLink = () => new Problem('unauthorized', 'the sign-in link is unknown, spent or expired')
const severalCookies = () =>
  unauthorized('the request carries more than one session cookie (one was set by another site or path); they are cleared: sign in again', true)
const otherSession = () => unauthorized('the session cookie is no longer the one this page signed in with: reload the page', true)

export const isConsolePath = (url: string) => url === '/console' || url.startsWith('/console/') || url.startsWith('/console?')

/**
 * The provider console (docs/design/console.md): its page and assets under /console, its session routes, and the
 * one thing it adds to the API: a session cookie, with the anti-CSRF header, authenticates /api/v1 requests as
 * the session's provider. Registered at the root (not encapsulated) for that hook alone; its routes are in a
 * child context of their own.
 */
async function consolePlugin(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  const sessions = new ConsoleSessions(options.database, options.config)
  const overHttps = overHttpsRule(options.config)
  const cookie = new SessionCookie(overHttps)
  const manifest = readManifest()
  const { clock } = options
  const publicLimit = options.publicLimit ? [options.publicLimit] : []

  // Runs before the API's authentication (which honours a principal already set): only a request without an
  // Authorization header, with the session cookie and the anti-CSRF header, is taken as the session's. A cookie
  // without the header is ignored, so a cross-site request riding on it meets the API's ordinary 401.
  app.addHook('onRequest', async (request, reply) => {
    if (!request.url.startsWith('/api/v1/') && request.url !== '/api/v1') return
    if (request.headers.authorization !== undefined || !hasCsrfProof(request)) return
    const [sessionId, ...others] = cookie.valuesIn(request)
    if (sessionId === undefined) return
    if (others.length > 0) {
      reply.header('set-cookie', cookie.clearingsFor(request))
      throw severalCookies()
    }
    const provider = await sessions.resolve(sessionId, clock())
    if (!provider) return
    const shown = request.headers[PROVIDER_HEADER]
    if (shown !== undefined && shown !== provider.id) throw otherSession()
    request.principal = { kind: 'provider', provider }
  })

  await app.register(
    async (routes) => {
      await routes.register(fastifyCookie)
      // On sending (not on receiving, where @fastify/helmet sets them): an answer refused by an earlier hook (a
      // wrong method, a bad Host, a drain) carries them too.
      routes.addHook('onSend', (request, reply, payload, done) => {
        setSecurityHeaders(request, reply, overHttps(request))
        done(null, payload)
      })
      routes.setNotFoundHandler((request, reply) => sendProblem(request, reply, new Problem('not-found', 'no such console resource')))

      const page = (request: FastifyRequest, reply: FastifyReply) =>
        reply
          .type('text/html; charset=utf-8')
          .header('cache-control', 'no-cache')
          .header('vary', 'accept-language')
          .send(consolePage(manifest, preferredLanguage(request.headers['accept-language'])))
      routes.get('', { schema: { hide: true } }, page)
      routes.get('/*', { schema: { hide: true } }, page)

      // Fingerprinted: cached for a year, never revalidated. Only the build's files, as built (with their .br and
      // .gz); anything else is 404.
      const built = new Set(manifest?.files.map((name) => `/${name}`))
      await routes.register(async (assets) => {
        // mime@3, which @fastify/send reads, still gives JavaScript its obsolete type (RFC 9239).
        assets.addHook('onSend', async (_request, reply) => {
          if (String(reply.getHeader('content-type')).startsWith('application/javascript')) reply.type('text/javascript; charset=utf-8')
        })
        await assets.register(fastifyStatic, {
          root: ASSETS_DIR,
          prefix: '/assets/',
          decorateReply: false,
          index: false,
          preCompressed: true,
          maxAge: '365d',
          immutable: true,
          allowedPath: (path) => built.has(path),
        })
      })

      // The session routes: the anti-CSRF header is required on each, so a cross-site page can neither sign a
      // browser in to an account of its choosing nor sign it out. A request carrying several session cookies has
      // them all cleared; which one is ours cannot be told.
      await routes.register(async (scope) => {
        const sessionRoutes = scope.withTypeProvider<TypeBoxTypeProvider>()
        sessionRoutes.addHook('preHandler', async (request, reply) => {
          if (!hasCsrfProof(request)) throw noCsrfProof()
          if (cookie.valuesIn(request).length > 1) reply.header('set-cookie', cookie.clearingsFor(request))
        })

        sessionRoutes.get('/session', { schema: { hide: true } }, async (request) => {
          const [sessionId, ...others] = cookie.valuesIn(request)
          if (others.length > 0) throw severalCookies()
          const provider = sessionId === undefined ? undefined : await sessions.resolve(sessionId, clock())
          if (!provider) throw signedOut()
          request.principal = { kind: 'provider', provider }
          return { provider: { id: provider.id, name: provider.name } }
        })

        sessionRoutes.post('/session', { schema: { hide: true, body: SignInBody }, onRequest: publicLimit }, async (request, reply) => {
          const body = request.body
          const now = clock()
          const signedIn =
            body.token !== undefined
              ? await sessions.signInWithToken(body.token.trim(), now)
              : body.link !== undefined
                ? await sessions.signInWithLink(body.link, now)
                : undefined
          if (!signedIn) throw refused()
          // A session cookie the browser already had is replaced: the old session ends here too.
          for (const previous of cookie.valuesIn(request)) await sessions.signOut(previous)
          cookie.set(request, reply, signedIn.sessionId)
          request.principal = { kind: 'provider', provider: signedIn.provider }
          return { provider: { id: signedIn.provider.id, name: signedIn.provider.name } }
        })

        sessionRoutes.delete('/session', { schema: { hide: true } }, async (request, reply) => {
          for (const sessionId of cookie.valuesIn(request)) await sessions.signOut(sessionId)
          cookie.clear(request, reply)
          return reply.code(204).send()
        })

        // Whose a sign-in link is, without spending it: the page asks before it offers the one button that does.
        sessionRoutes.post('/link-owner', { schema: { hide: true, body: LinkBody }, onRequest: publicLimit }, async (request, reply) => {
          const owner = await sessions.linkOwner(request.body.link, clock())
          if (!owner) throw unknownLink()
          reply.header('cache-control', 'no-store')
          return { provider: { id: owner.id, name: owner.name } }
        })
      })
    },
    { prefix: '/console' },
  )
}

// Not encapsulated (what fastify-plugin does): the /api/v1 hook above must reach routes registered beside it.
;(consolePlugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true

export { consolePlugin }
