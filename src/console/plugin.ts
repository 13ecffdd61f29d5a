import fastifyStatic from '@fastify/static'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import type { Clock } from '../clock.js'
import type { Database } from '../db/connection.js'
import { Problem, sendProblem } from '../errors.js'
import { ASSETS_DIR, readManifest } from './assets.js'
import { clearedCookie, hasCsrfProof, sessionCookie, sessionCookieOf } from './cookie.js'
import { consolePage, preferredLanguage } from './page.js'
import { ConsoleSessions } from './sessions.js'

export interface ConsoleOptions {
  database: Database
  clock: Clock
}

/**
 * Every console response carries it: scripts and styles only from this origin (no inline code, no eval), nothing
 * framed by another site, forms and requests only to this origin. Images may come from https (brand images).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' https: data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "object-src 'none'",
].join('; ')

const SignInBody = Type.Object(
  {
    token: Type.Optional(Type.String({ maxLength: 200 })),
    link: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
)

const refused = () => new Problem('unauthorized', 'the token or sign-in link is unknown, revoked, spent or expired, or not a provider’s')
const signedOut = () => new Problem('unauthorized', 'not signed in, or the session has ended')
const noCsrfProof = () => new Problem('forbidden', 'console requests must carry the X-Console-Session: 1 header')

/**
 * The provider console (docs/design/console.md): its page and assets under /console, its session routes, and the
 * one thing it adds to the API: a session cookie, with the anti-CSRF header, authenticates /api/v1 requests as
 * the session's provider. Registered at the root (not encapsulated) for that hook alone; its routes are in a
 * child context of their own.
 */
async function consolePlugin(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  const sessions = new ConsoleSessions(options.database)
  const manifest = readManifest()
  const { clock } = options

  // Runs before the API's authentication (which honours a principal already set): only a request without an
  // Authorization header, with the session cookie and the anti-CSRF header, is taken as the session's. A cookie
  // without the header is ignored, so a cross-site request riding on it meets the API's ordinary 401.
  app.addHook('onRequest', async (request) => {
    if (!request.url.startsWith('/api/v1/') && request.url !== '/api/v1') return
    if (request.headers.authorization !== undefined || !hasCsrfProof(request)) return
    const sessionId = sessionCookieOf(request)
    if (sessionId === undefined) return
    const provider = await sessions.resolve(sessionId, clock())
    if (provider) request.principal = { kind: 'provider', provider }
  })

  await app.register(
    async (routes) => {
      routes.addHook('onSend', async (_request, reply) => {
        reply.header('content-security-policy', CONTENT_SECURITY_POLICY)
        reply.header('x-content-type-options', 'nosniff')
        reply.header('referrer-policy', 'no-referrer')
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

      // Session routes: the anti-CSRF header is required on each, so a cross-site page can neither sign a browser
      // in to an account of its choosing nor sign it out.
      routes.addHook('preHandler', async (request) => {
        if (request.routeOptions.url?.startsWith('/console/session') && !hasCsrfProof(request)) throw noCsrfProof()
      })

      routes.get('/session', { schema: { hide: true } }, async (request) => {
        const sessionId = sessionCookieOf(request)
        const provider = sessionId === undefined ? undefined : await sessions.resolve(sessionId, clock())
        if (!provider) throw signedOut()
        return { provider: { id: provider.id, name: provider.name } }
      })

      routes.withTypeProvider<TypeBoxTypeProvider>().post('/session', { schema: { hide: true, body: SignInBody } }, async (request, reply) => {
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
        const previous = sessionCookieOf(request)
        if (previous !== undefined) await sessions.signOut(previous)
        reply.header('set-cookie', sessionCookie(request, signedIn.sessionId)).header('cache-control', 'no-store')
        return { provider: { id: signedIn.provider.id, name: signedIn.provider.name } }
      })

      routes.delete('/session', { schema: { hide: true } }, async (request, reply) => {
        const sessionId = sessionCookieOf(request)
        if (sessionId !== undefined) await sessions.signOut(sessionId)
        return reply.header('set-cookie', clearedCookie(request)).code(204).send()
      })
    },
    { prefix: '/console' },
  )
}

// Not encapsulated (what fastify-plugin does): the /api/v1 hook above must reach routes registered beside it.
;(consolePlugin as unknown as Record<symbol, boolean>)[Symbol.for('skip-override')] = true

export { consolePlugin }
