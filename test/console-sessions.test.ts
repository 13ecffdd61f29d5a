import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { buildApp } from '../src/app.js'
import { ASSETS_DIR } from '../src/console/assets.js'
import { CONTENT_SECURITY_POLICY } from '../src/console/security-headers.js'
import { ConsoleSessions, LINK_LIFETIME_MS, SESSION_IDLE_MS } from '../src/console/sessions.js'
import { listingBody } from './fixtures.js'
import { startService, testDialects, type TestService } from './helper.js'
import { runCli } from './process.js'

// The console's server side (shared/spec/CONSOLE.md, "Sessions"): sessions and sign-in links, the cookie's flags,
// the CSP on every console response, and the cookie as a credential for /api/v1 (CSRF-safe), through inject.

const CSRF = { 'x-console-session': '1' }

function cookieOf(setCookie: string | string[] | undefined): string {
  const header = Array.isArray(setCookie) ? setCookie[0] : setCookie
  const value = /^console_session=([^;]*)/.exec(header ?? '')?.[1]
  assert.ok(value, `a session cookie is set (got ${header})`)
  return `console_session=${value}`
}

for (const dialect of await testDialects()) {
  describe(`console sessions [${dialect}]`, { timeout: 60_000 }, () => {
    const service = {} as TestService
    before(async () => Object.assign(service, await startService(dialect)))
    after(async () => service.close?.())

    const inject = (options: InjectOptions) => service.app.inject(options)
    const signIn = (body: unknown, headers: Record<string, string> = CSRF) =>
      inject({ method: 'POST', url: '/console/session', headers, payload: body as object })
    const listings = (cookie: string, headers: Record<string, string> = CSRF) =>
      inject({ method: 'GET', url: '/api/v1/listing', headers: { cookie, ...headers } })

    test('a provider token signs in: an HttpOnly, SameSite=Strict cookie, not Secure over plain http', async () => {
      const provider = await service.newProvider({ name: 'Corner Bakery' })
      const response = await signIn({ token: provider.token })
      assert.equal(response.statusCode, 200)
      assert.deepEqual(response.json(), { provider: { id: provider.id, name: 'Corner Bakery' } })
      const setCookie = String(response.headers['set-cookie'])
      assert.match(setCookie, /; HttpOnly/)
      assert.match(setCookie, /; SameSite=Strict/)
      assert.match(setCookie, /; Path=\//)
      assert.doesNotMatch(setCookie, /Secure/)
      assert.ok(!setCookie.includes(provider.token.slice(4)), 'the cookie is not the token')
      assert.ok(!response.body.includes(provider.token.slice(4)), 'the answer does not hold the token')
      const session = cookieOf(response.headers['set-cookie'])
      const page = await listings(session)
      assert.equal(page.statusCode, 200)
      assert.equal(page.json().recordCount, 0)
    })

    test('a wrong, malformed, revoked or marketplace token does not sign in (401), and sets no cookie', async () => {
      const provider = await service.newProvider()
      const revoked = await service.newProvider()
      await service.providers.revokeToken(revoked.tokenId, service.clock())
      const marketplace = await service.newMarketplace()
      for (const token of [`lst_${'A'.repeat(43)}`, 'not a token', revoked.token, marketplace.token, '']) {
        const response = await signIn({ token })
        assert.equal(response.statusCode, 401, token)
        assert.equal(response.headers['set-cookie'], undefined)
        assert.equal(response.json().type, '/problems/unauthorized')
      }
      assert.equal((await signIn({ token: provider.token })).statusCode, 200)
    })

    test('session routes refuse a request without the anti-CSRF header (a cross-site form cannot sign in or out)', async () => {
      const provider = await service.newProvider()
      const response = await signIn({ token: provider.token }, {})
      assert.equal(response.statusCode, 403)
      assert.equal(response.headers['set-cookie'], undefined)
      const session = cookieOf((await signIn({ token: provider.token })).headers['set-cookie'])
      assert.equal((await inject({ method: 'DELETE', url: '/console/session', headers: { cookie: session } })).statusCode, 403)
      assert.equal((await listings(session)).statusCode, 200, 'still signed in')
    })

    test('CSRF: a cookie-authenticated mutation without the X-Console-Session header is refused, nothing stored', async () => {
      const provider = await service.newProvider()
      const session = cookieOf((await signIn({ token: provider.token })).headers['set-cookie'])
      const body = listingBody()
      for (const headers of [{}, { 'x-console-session': '0' }]) {
        const refused = await inject({ method: 'POST', url: '/api/v1/listing/create', headers: { cookie: session, ...headers }, payload: body })
        assert.equal(refused.statusCode, 401)
        assert.equal(refused.json().type, '/problems/unauthorized')
      }
      assert.equal((await listings(session)).json().recordCount, 0, 'nothing was created')
      const created = await inject({ method: 'POST', url: '/api/v1/listing/create', headers: { cookie: session, ...CSRF }, payload: body })
      assert.equal(created.statusCode, 201)
      assert.equal((await listings(session)).json().recordCount, 1)
    })

    test('a session sees only its own provider’s listings, and a marketplace route is 403 for it', async () => {
      const mine = await service.newProvider()
      const other = await service.newProvider()
      assert.equal((await service.create(other.token, listingBody())).status, 201)
      const session = cookieOf((await signIn({ token: mine.token })).headers['set-cookie'])
      assert.equal((await listings(session)).json().recordCount, 0)
      const discover = await inject({ method: 'GET', url: '/api/v1/discover?latitude=1&longitude=1&radiusKm=1', headers: { cookie: session, ...CSRF } })
      assert.equal(discover.statusCode, 403)
    })

    test('revoking the session’s token ends the session at once', async () => {
      const provider = await service.newProvider()
      const session = cookieOf((await signIn({ token: provider.token })).headers['set-cookie'])
      assert.equal((await listings(session)).statusCode, 200)
      await service.providers.revokeToken(provider.tokenId, service.clock())
      assert.equal((await listings(session)).statusCode, 401)
      assert.equal((await inject({ method: 'GET', url: '/console/session', headers: { cookie: session, ...CSRF } })).statusCode, 401)
    })

    test('sign-out ends the session (on every instance: a second app on the same database agrees)', async () => {
      const provider = await service.newProvider()
      const session = cookieOf((await signIn({ token: provider.token })).headers['set-cookie'])
      const other: FastifyInstance = await buildApp({ config: service.config, database: service.database, clock: service.clock })
      try {
        const elsewhere = await other.inject({ method: 'GET', url: '/api/v1/listing', headers: { cookie: session, ...CSRF } })
        assert.equal(elsewhere.statusCode, 200)
        const out = await inject({ method: 'DELETE', url: '/console/session', headers: { cookie: session, ...CSRF } })
        assert.equal(out.statusCode, 204)
        assert.match(String(out.headers['set-cookie']), /^console_session=;.*Max-Age=0/)
        assert.equal((await other.inject({ method: 'GET', url: '/api/v1/listing', headers: { cookie: session, ...CSRF } })).statusCode, 401)
        assert.equal((await listings(session)).statusCode, 401)
      } finally {
        await other.close()
      }
    })

    test('a session ends after 12 hours idle; a request before then keeps it alive', async () => {
      const provider = await service.newProvider()
      const session = cookieOf((await signIn({ token: provider.token })).headers['set-cookie'])
      service.clock.now += SESSION_IDLE_MS - 1000
      assert.equal((await listings(session)).statusCode, 200, 'just before 12 h: alive, and seen now')
      service.clock.now += SESSION_IDLE_MS - 1000
      assert.equal((await listings(session)).statusCode, 200, '12 h after sign-in but not idle for 12 h')
      service.clock.now += SESSION_IDLE_MS
      assert.equal((await listings(session)).statusCode, 401, '12 h idle: ended')
    })

    test('a sign-in link works once, within 15 minutes (injected clock)', async () => {
      const provider = await service.newProvider()
      const sessions = new ConsoleSessions(service.database, service.config)
      const { code, expiresAtMs } = await sessions.createLink(provider.id, service.clock())
      assert.equal(expiresAtMs, service.clock() + LINK_LIFETIME_MS)
      service.clock.now += LINK_LIFETIME_MS - 1
      const first = await signIn({ link: code })
      assert.equal(first.statusCode, 200)
      assert.equal(first.json().provider.id, provider.id)
      assert.equal((await listings(cookieOf(first.headers['set-cookie']))).statusCode, 200)
      assert.equal((await signIn({ link: code })).statusCode, 401, 'spent')

      const late = await sessions.createLink(provider.id, service.clock())
      service.clock.now += LINK_LIFETIME_MS
      assert.equal((await signIn({ link: late.code })).statusCode, 401, 'expired after 15 minutes')
    })

    test('two uses of one link at once: exactly one signs in', async () => {
      const provider = await service.newProvider()
      const { code } = await new ConsoleSessions(service.database, service.config).createLink(provider.id, service.clock())
      const answers = await Promise.all(Array.from({ length: 5 }, () => signIn({ link: code })))
      assert.deepEqual(answers.map((a) => a.statusCode).sort(), [200, 401, 401, 401, 401])
    })

    test('every console response carries the strict CSP: page, assets, session routes, errors', async () => {
      const provider = await service.newProvider()
      const page = await inject({ method: 'GET', url: '/console' })
      assert.equal(page.statusCode, 200)
      assert.match(String(page.headers['content-type']), /^text\/html/)
      const scripts = [...page.body.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1] as string)
      const styles = [...page.body.matchAll(/<link rel="stylesheet" href="([^"]+)"/g)].map((m) => m[1] as string)
      assert.equal(scripts.length, 1, 'the page names its script')
      assert.equal(styles.length, 1, 'the page names its style sheet')
      assert.doesNotMatch(page.body, /<script(?![^>]*src=)/, 'no inline script')
      assert.doesNotMatch(page.body, /<style|style=/, 'no inline style')
      const session = cookieOf((await signIn({ token: provider.token })).headers['set-cookie'])
      const answers = [
        page,
        await inject({ method: 'GET', url: '/console/listings/xyz' }),
        await inject({ method: 'GET', url: scripts[0] }),
        await inject({ method: 'GET', url: styles[0] }),
        await inject({ method: 'GET', url: '/console/assets/nope.js' }),
        await inject({ method: 'GET', url: '/console/session', headers: { cookie: session, ...CSRF } }),
        await inject({ method: 'GET', url: '/console/session', headers: CSRF }),
        await signIn({ token: 'wrong' }),
        await signIn({ token: provider.token }, {}),
        await inject({ method: 'PUT', url: '/console/whatever' }),
      ]
      for (const answer of answers) {
        assert.equal(answer.headers['content-security-policy'], CONTENT_SECURITY_POLICY, `${answer.statusCode} ${answer.body.slice(0, 60)}`)
      }
      assert.match(CONTENT_SECURITY_POLICY, /frame-ancestors 'none'/)
      assert.match(CONTENT_SECURITY_POLICY, /script-src 'self'(;|$)/)
      assert.doesNotMatch(CONTENT_SECURITY_POLICY, /unsafe-inline|unsafe-eval/)
    })

    test('fingerprinted assets are cached for a year, immutable, and compressed when asked', async () => {
      const page = await inject({ method: 'GET', url: '/console' })
      const script = /<script[^>]*src="([^"]+)"/.exec(page.body)?.[1] as string
      assert.match(script, /^\/console\/assets\/console-[A-Z0-9]{8}\.js$/)
      const plain = await inject({ method: 'GET', url: script })
      assert.equal(plain.statusCode, 200)
      assert.equal(plain.headers['cache-control'], 'public, max-age=31536000, immutable')
      assert.match(String(plain.headers['content-type']), /^text\/javascript/)
      const br = await inject({ method: 'GET', url: script, headers: { 'accept-encoding': 'br' } })
      assert.equal(br.headers['content-encoding'], 'br')
      assert.ok(br.rawPayload.length < plain.rawPayload.length)
      const built = `${ASSETS_DIR}${script.split('/').pop() as string}`
      assert.deepEqual(br.rawPayload, readFileSync(`${built}.br`), 'the build’s own .br, at its best ratio')
      const gzip = await inject({ method: 'GET', url: script, headers: { 'accept-encoding': 'gzip' } })
      assert.deepEqual(gzip.rawPayload, readFileSync(`${built}.gz`), 'the build’s own .gz')
      const again = await inject({ method: 'GET', url: script, headers: { 'if-none-match': String(plain.headers.etag) } })
      assert.equal(again.statusCode, 304)
      const head = await inject({ method: 'HEAD', url: script })
      assert.equal(head.statusCode, 200)
      assert.equal(head.headers['content-length'], String(plain.rawPayload.length))
      const part = await inject({ method: 'GET', url: script, headers: { range: 'bytes=0-9' } })
      assert.equal(part.statusCode, 206)
      assert.deepEqual(part.rawPayload, plain.rawPayload.subarray(0, 10))
      for (const other of ['/console/assets/manifest.json', `${script}.br`]) {
        assert.equal((await inject({ method: 'GET', url: other })).statusCode, 404, `${other}: only the built files`)
      }
      assert.equal(page.headers['cache-control'], 'no-cache', 'the page itself is revalidated, so a new build is picked up')
    })

    test('the first load is at most 100 KB of compressed JavaScript and CSS', async () => {
      const page = await inject({ method: 'GET', url: '/console' })
      const assets = [...page.body.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1] as string)
      assert.equal(assets.length, 2)
      let total = 0
      for (const encoding of ['br', 'gzip']) {
        total = 0
        for (const url of assets) total += (await inject({ method: 'GET', url, headers: { 'accept-encoding': encoding } })).rawPayload.length
        assert.ok(total <= 100 * 1024, `${total} bytes of ${encoding}`)
      }
    })

    test('the page follows Accept-Language on a first visit', async () => {
      const arabic = await inject({ method: 'GET', url: '/console', headers: { 'accept-language': 'ar-SA,ar;q=0.9,en;q=0.8' } })
      assert.match(arabic.body, /<html lang="ar" dir="rtl">/)
      const english = await inject({ method: 'GET', url: '/console', headers: { 'accept-language': 'fr, en;q=0.5, ar;q=0.2' } })
      assert.match(english.body, /<html lang="en" dir="ltr">/)
    })

    test('console routes stay out of the OpenAPI document (the API is unchanged)', async () => {
      const document = (await inject({ method: 'GET', url: '/openapi.json' })).json()
      assert.ok(!Object.keys(document.paths).some((path) => path.startsWith('/console')))
    })
  })
}

describe('listing-service console-link', { timeout: 60_000 }, () => {
  test('prints a one-time link under PUBLIC_BASE_URL, or http://HOST:PORT; an unknown provider exits 1', async () => {
    const dialect = (await testDialects())[0] ?? 'sqlite'
    const service = await startService(dialect)
    try {
      const provider = await service.newProvider()
      const env = { DATABASE_URL: service.databaseUrl, LOG_LEVEL: 'silent' }
      const withBase = await runCli(['console-link', '--provider', provider.id], { ...env, PUBLIC_BASE_URL: 'https://listings.example.com/' })
      assert.equal(withBase.code, 0, withBase.stderr)
      const printed = JSON.parse(withBase.stdout)
      assert.deepEqual(Object.keys(printed).sort(), ['expiresAt', 'url'])
      assert.match(printed.url, /^https:\/\/listings\.example\.com\/console\/link#[A-Za-z0-9_-]{43}$/)
      const lifetime = Date.parse(printed.expiresAt) - Date.now()
      assert.ok(lifetime > LINK_LIFETIME_MS - 60_000 && lifetime <= LINK_LIFETIME_MS, `expires in ${lifetime} ms`)

      const plain = JSON.parse((await runCli(['console-link', '--provider', provider.id], { ...env, HOST: '127.0.0.1', PORT: '4321' })).stdout)
      assert.match(plain.url, /^http:\/\/127\.0\.0\.1:4321\/console\/link#/)

      // The printed code signs in once through the running service.
      const code = plain.url.split('#')[1]
      const first = await service.app.inject({ method: 'POST', url: '/console/session', headers: CSRF, payload: { link: code } })
      assert.equal(first.statusCode, 200)
      assert.equal(first.json().provider.id, provider.id)

      const unknown = await runCli(['console-link', '--provider', 'prv_nope'], env)
      assert.equal(unknown.code, 1)
      const usage = await runCli(['console-link'], env)
      assert.equal(usage.code, 2)
    } finally {
      await service.close()
    }
  })
})
