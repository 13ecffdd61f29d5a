import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../src/app.js'
import type { Config } from '../src/config.js'
import { CONTENT_SECURITY_POLICY } from '../src/console/security-headers.js'
import { ConsoleSessions, SESSION_IDLE_MS } from '../src/console/sessions.js'
import { cookieDomainsFor, cookiePathsFor } from '../src/console/cookie.js'
import { startService, testDialects, type TestService } from './helper.js'
import { listingBody } from './fixtures.js'
import { killAll, runCli } from './process.js'

// Issue 35, server side: a sign-in link is looked up before it is spent; several session cookies authenticate
// nothing and are cleared; the cookie's name and flags follow the configured scheme, never a client's header;
// sessions end at their maximum lifetime and by `console-sessions revoke` on every instance; every authenticated
// answer says how it may be cached; webhook URLs hold no bidirectional controls; and the console's routes that
// take a credential are under the public routes' limit. (The browser side: console-attacks.test.ts.)

after(killAll)

const CSRF = { 'x-console-session': '1' }
const HOUR_MS = 60 * 60 * 1000

function setCookies(response: LightMyRequestResponse): string[] {
  const header = response.headers['set-cookie']
  return header === undefined ? [] : Array.isArray(header) ? header : [header]
}

/** The cookie a sign-in set, as a Cookie header's pair. */
function sessionPair(response: LightMyRequestResponse): string {
  const set = setCookies(response).find((line) => /^(__Host-)?console_session=[^;]+;/.test(line))
  assert.ok(set, `a session cookie is set (got ${JSON.stringify(setCookies(response))})`)
  return set.split(';')[0] as string
}

const valueOf = (pair: string) => pair.slice(pair.indexOf('=') + 1)

for (const dialect of await testDialects()) {
  describe(`console sign-in defences [${dialect}]`, { timeout: 120_000 }, () => {
    const service = {} as TestService
    const others: FastifyInstance[] = []
    before(async () => Object.assign(service, await startService(dialect)))
    after(async () => {
      for (const app of others) await app.close()
      await service.close?.()
    })

    /** Another instance on the same database and clock, with settings of its own. */
    async function instance(settings: Partial<Config> = {}): Promise<FastifyInstance> {
      const app = await buildApp({ config: { ...service.config, ...settings }, database: service.database, clock: service.clock })
      others.push(app)
      return app
    }
    const inject = (options: InjectOptions, app: FastifyInstance = service.app) => app.inject(options)
    const signIn = (body: unknown, headers: Record<string, string> = CSRF, app?: FastifyInstance) =>
      inject({ method: 'POST', url: '/console/session', headers, payload: body as object }, app)
    const listings = (cookie: string, headers: Record<string, string> = {}, app?: FastifyInstance) =>
      inject({ method: 'GET', url: '/api/v1/listing', headers: { cookie, ...CSRF, ...headers } }, app)
    const newLink = async (providerId: string) => (await new ConsoleSessions(service.database, service.config).createLink(providerId, service.clock())).code
    const lookUp = (link: string, headers: Record<string, string> = CSRF, app?: FastifyInstance) =>
      inject({ method: 'POST', url: '/console/link-owner', headers, payload: { link } }, app)

    test('a link is looked up without being spent: whose it is, then one sign-in; spent, expired or unknown: 401', async () => {
      const provider = await service.newProvider({ name: 'Lookup Bakery' })
      const code = await newLink(provider.id)
      for (let i = 0; i < 3; i++) {
        const owner = await lookUp(code)
        assert.equal(owner.statusCode, 200, owner.body)
        assert.deepEqual(owner.json(), { provider: { id: provider.id, name: 'Lookup Bakery' } })
        assert.equal(owner.headers['cache-control'], 'no-store')
        assert.equal(owner.headers['content-security-policy'], CONTENT_SECURITY_POLICY)
        assert.equal(owner.headers['set-cookie'], undefined, 'a look-up opens no session')
      }
      assert.equal((await signIn({ link: code })).statusCode, 200, 'still unspent after three look-ups')
      const spent = await lookUp(code)
      assert.equal(spent.statusCode, 401, 'spent')
      assert.equal(spent.json().type, '/problems/unauthorized')

      const late = await newLink(provider.id)
      service.clock.now += 15 * 60 * 1000
      assert.equal((await lookUp(late)).statusCode, 401, 'expired')
      for (const unknown of ['A'.repeat(43), 'short', '']) assert.equal((await lookUp(unknown)).statusCode, 401, unknown)
    })

    test('the look-up wants the anti-CSRF header and a body of one link, as the session routes do', async () => {
      const provider = await service.newProvider()
      const code = await newLink(provider.id)
      assert.equal((await lookUp(code, {})).statusCode, 403)
      const extra = await inject({ method: 'POST', url: '/console/link-owner', headers: CSRF, payload: { link: code, token: 'x' } })
      assert.equal(extra.statusCode, 400)
      assert.equal(extra.json().errors[0].pointer, '/token')
    })

    test('POST /console/session and the link look-up count against the public routes’ limit, by address', async () => {
      const limited = await instance({ PUBLIC_RATE_LIMIT_PER_MINUTE: 3 })
      const provider = await service.newProvider()
      const code = await newLink(provider.id)
      const answers = [
        await signIn({ token: 'lst_wrong' }, CSRF, limited),
        await lookUp(code, CSRF, limited),
        await signIn({ token: provider.token }, CSRF, limited),
        await signIn({ token: provider.token }, CSRF, limited),
        await lookUp(code, CSRF, limited),
      ]
      assert.deepEqual(
        answers.map((answer) => answer.statusCode),
        [401, 200, 200, 429, 429],
      )
      const refused = answers[3] as LightMyRequestResponse
      assert.equal(refused.json().type, '/problems/rate-limited')
      assert.match(String(refused.headers['retry-after']), /^\d+$/)
      assert.equal(refused.headers['content-security-policy'], CONTENT_SECURITY_POLICY)
      const page = await inject({ method: 'GET', url: '/console' }, limited)
      assert.equal(page.statusCode, 200, 'the page itself is not limited')
    })

    test('two session cookies (one tossed in by another site or path): 401, both cleared at every path they could have', async () => {
      const victim = await service.newProvider({ name: 'Victim Bakery' })
      const attacker = await service.newProvider({ name: 'Attacker Bakery' })
      await service.create(attacker.token, listingBody())
      const mine = sessionPair(await signIn({ token: victim.token }))
      const theirs = sessionPair(await signIn({ token: attacker.token }))
      assert.equal((await listings(mine)).json().recordCount, 0)
      for (const cookie of [`${theirs}; ${mine}`, `${mine}; ${theirs}`, `console_session=bogus; ${mine}`, `${mine}; other=1; ${mine}`]) {
        const answer = await listings(cookie)
        assert.equal(answer.statusCode, 401, cookie)
        assert.equal(answer.json().type, '/problems/unauthorized')
        assert.match(answer.json().detail, /more than one session cookie/)
        const cleared = setCookies(answer)
        for (const path of ['/', '/api', '/api/', '/api/v1', '/api/v1/', '/api/v1/listing']) {
          assert.ok(
            cleared.some((line) => line.startsWith('console_session=;') && line.includes(`; Path=${path};`) && /Max-Age=0/.test(line)),
            `cleared at ${path}: ${JSON.stringify(cleared)}`,
          )
        }
        assert.ok(
          cleared.every((line) => !line.includes('Domain=')),
          '127.0.0.1 has no parent domain',
        )
      }
      // The same on the console's own session route, which the page asks first.
      const session = await inject({ method: 'GET', url: '/console/session', headers: { cookie: `${theirs}; ${mine}`, ...CSRF } })
      assert.equal(session.statusCode, 401)
      assert.ok(setCookies(session).some((line) => line.includes('; Path=/console/;')))
      // A bearer token decides alone: the cookies are not looked at.
      const bearer = await inject({
        method: 'GET',
        url: '/api/v1/listing',
        headers: { cookie: `${theirs}; ${mine}`, ...CSRF, authorization: `Bearer ${victim.token}` },
      })
      assert.equal(bearer.statusCode, 200)
      assert.equal(bearer.headers['set-cookie'], undefined)
      assert.equal((await listings(mine)).statusCode, 200, 'one cookie alone still works')
    })

    test('signing in while several session cookies are sent clears them, then sets the new one; both old sessions end', async () => {
      const provider = await service.newProvider()
      const first = sessionPair(await signIn({ token: provider.token }))
      const second = sessionPair(await signIn({ token: provider.token }))
      const answer = await signIn({ token: provider.token }, { ...CSRF, cookie: `${first}; ${second}` })
      assert.equal(answer.statusCode, 200)
      const lines = setCookies(answer)
      const fresh = sessionPair(answer)
      assert.ok(lines.indexOf(lines.find((line) => line.startsWith(`${fresh};`)) as string) === lines.length - 1, 'the new cookie comes last')
      assert.equal((await listings(fresh)).statusCode, 200)
      assert.equal((await listings(first)).statusCode, 401)
      assert.equal((await listings(second)).statusCode, 401)
    })

    test('a cookie that is no longer the provider the page shows (X-Console-Provider) is refused, not used for another', async () => {
      const shown = await service.newProvider()
      const other = await service.newProvider()
      const cookie = sessionPair(await signIn({ token: other.token }))
      const refused = await listings(cookie, { 'x-console-provider': shown.id })
      assert.equal(refused.statusCode, 401)
      assert.match(refused.json().detail, /no longer the one this page signed in with/)
      assert.equal((await listings(cookie, { 'x-console-provider': other.id })).statusCode, 200)
    })

    test('the cookie is Secure and __Host- only over HTTPS as configured: X-Forwarded-Proto alone is not believed', async () => {
      const provider = await service.newProvider()
      const https = { 'x-forwarded-proto': 'https' }
      const check = (answer: LightMyRequestResponse, secure: boolean, why: string) => {
        const line = setCookies(answer).find((l) => l.includes('console_session=')) ?? ''
        if (secure) {
          assert.match(line, /^__Host-console_session=[^;]+; Path=\/; HttpOnly; Secure; SameSite=Strict$/, why)
          assert.equal(answer.headers['strict-transport-security'], 'max-age=31536000', why)
        } else {
          assert.match(line, /^console_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict$/, why)
          assert.equal(answer.headers['strict-transport-security'], undefined, why)
        }
      }
      check(await signIn({ token: provider.token }, { ...CSRF, ...https }), false, 'a client’s X-Forwarded-Proto, no TRUST_PROXY')
      const proxied = await instance({ TRUST_PROXY: true })
      check(await signIn({ token: provider.token }, { ...CSRF, ...https }, proxied), true, 'TRUST_PROXY and https')
      check(await signIn({ token: provider.token }, { ...CSRF, 'x-forwarded-proto': 'https, http' }, proxied), false, 'the nearest proxy said http')
      check(await signIn({ token: provider.token }, CSRF, proxied), false, 'TRUST_PROXY without the header')
      const public_ = await instance({ PUBLIC_BASE_URL: 'https://listings.example.com' })
      const secure = await signIn({ token: provider.token }, CSRF, public_)
      check(secure, true, 'an https PUBLIC_BASE_URL')

      // Over HTTPS only the __Host- cookie is read: one set under the plain name (by a page on plain http) is not.
      const pair = sessionPair(secure)
      assert.equal((await listings(pair, {}, public_)).statusCode, 200)
      assert.equal((await listings(`console_session=${valueOf(pair)}`, {}, public_)).statusCode, 401)
      const out = await inject({ method: 'DELETE', url: '/console/session', headers: { ...CSRF, cookie: pair } }, public_)
      assert.match(
        setCookies(out)[0] ?? '',
        /^__Host-console_session=; Max-Age=0; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; Secure; SameSite=Strict$/,
      )
    })

    test('a session ends CONSOLE_SESSION_MAX_HOURS (168 by default) after sign-in, however busy', async () => {
      assert.equal(service.config.CONSOLE_SESSION_MAX_HOURS, 168)
      const provider = await service.newProvider()
      const { code } = await new ConsoleSessions(service.database, service.config).createLink(provider.id, service.clock())
      const cookie = sessionPair(await signIn({ link: code }))
      const started = service.clock.now
      while (service.clock.now + 11 * HOUR_MS < started + 168 * HOUR_MS) {
        service.clock.now += 11 * HOUR_MS
        assert.equal((await listings(cookie)).statusCode, 200, `${(service.clock.now - started) / HOUR_MS} h, never idle 12 h`)
      }
      service.clock.now = started + 168 * HOUR_MS - 1
      assert.equal((await listings(cookie)).statusCode, 200, 'just before 168 h')
      service.clock.now = started + 168 * HOUR_MS
      assert.equal((await listings(cookie)).statusCode, 401, 'at 168 h')
      assert.equal((await inject({ method: 'GET', url: '/console/session', headers: { cookie, ...CSRF } })).statusCode, 401)

      const short = await instance({ CONSOLE_SESSION_MAX_HOURS: 1 })
      const brief = sessionPair(await signIn({ token: provider.token }, CSRF, short))
      service.clock.now += HOUR_MS - 1
      assert.equal((await listings(brief, {}, short)).statusCode, 200)
      service.clock.now += 1
      assert.equal((await listings(brief, {}, short)).statusCode, 401)
      assert.ok(SESSION_IDLE_MS < HOUR_MS * 168)
    })

    test('`console-sessions revoke --provider` ends its sessions on every instance at once, and spends its links', async () => {
      const provider = await service.newProvider()
      const bystander = await service.newProvider()
      const second = await instance()
      const byToken = sessionPair(await signIn({ token: provider.token }))
      const byLink = sessionPair(await signIn({ link: await newLink(provider.id) }, CSRF, second))
      const theirs = sessionPair(await signIn({ token: bystander.token }))
      const unused = await newLink(provider.id)
      for (const app of [service.app, second]) {
        for (const cookie of [byToken, byLink]) assert.equal((await listings(cookie, {}, app)).statusCode, 200)
      }
      const result = await runCli(['console-sessions', 'revoke', '--provider', provider.id], { DATABASE_URL: service.databaseUrl, LOG_LEVEL: 'silent' })
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stderr, '')
      assert.deepEqual(JSON.parse(result.stdout), { providerId: provider.id, revoked: 2, linksSpent: 1 })
      for (const app of [service.app, second]) {
        for (const cookie of [byToken, byLink]) assert.equal((await listings(cookie, {}, app)).statusCode, 401, 'ended on every instance, no cache')
        assert.equal((await listings(theirs, {}, app)).statusCode, 200, 'another provider’s session is untouched')
      }
      assert.equal((await lookUp(unused)).statusCode, 401, 'its unused link is spent')
      assert.equal((await signIn({ token: provider.token })).statusCode, 200, 'its token still signs in')

      const env = { DATABASE_URL: service.databaseUrl, LOG_LEVEL: 'silent' }
      for (const args of [
        ['console-sessions'],
        ['console-sessions', 'revoke'],
        ['console-sessions', 'revoke', '--provider'],
        ['console-sessions', 'end', '--provider', provider.id],
        ['console-sessions', 'revoke', '--provider', provider.id, 'extra'],
      ]) {
        const usage = await runCli(args, env)
        assert.equal(usage.code, 2, args.join(' '))
        assert.equal(usage.stdout, '')
        assert.match(usage.stderr, /Usage:[\s\S]*console-sessions revoke --provider/)
      }
      const unknown = await runCli(['console-sessions', 'revoke', '--provider', 'prv_nope'], env)
      assert.equal(unknown.code, 1)
      assert.match(unknown.stderr, /no provider with id prv_nope/)
    })

    test('every answer to an authenticated request says no-store, unless it revalidates (private, no-cache); secrets always no-store', async () => {
      const provider = await service.newProvider()
      const { token } = provider
      const created = await service.request('POST', '/api/v1/webhooks', { token, json: { url: 'https://pos.example.com/hooks' } })
      assert.equal(created.status, 201)
      const id = created.body.id as string
      const listing = await service.create(token, listingBody())
      const answers: Array<[what: string, cacheControl: string | null, expected: string]> = []
      const record = (what: string, response: { headers: Headers }, expected: string) => answers.push([what, response.headers.get('cache-control'), expected])
      record('POST /webhooks (a secret)', created, 'no-store')
      record('rotate-secret (a secret)', await service.request('POST', `/api/v1/webhooks/${id}/rotate-secret`, { token }), 'no-store')
      record('GET /webhooks', await service.request('GET', '/api/v1/webhooks', { token }), 'no-store')
      record('GET /webhooks/{id}', await service.request('GET', `/api/v1/webhooks/${id}`, { token }), 'no-store')
      record('deliveries', await service.request('GET', `/api/v1/webhooks/${id}/deliveries`, { token }), 'no-store')
      record('enable', await service.request('POST', `/api/v1/webhooks/${id}/enable`, { token }), 'no-store')
      record('GET /events', await service.request('GET', '/api/v1/events', { token }), 'no-store')
      record('a 404 under /api/v1', await service.request('GET', '/api/v1/nothing', { token }), 'no-store')
      record('a 400 under /api/v1', await service.request('GET', '/api/v1/listing?limit=0', { token }), 'no-store')
      record('the listing page', await service.list(token), 'private, no-cache')
      record('one listing', await service.request('GET', `/api/v1/listing/${listing.body.listingId}`, { token }), 'private, no-cache')
      const marketplace = await service.newMarketplace()
      record('discovery', await service.request('GET', '/api/v1/discover?latitude=24.7&longitude=46.7&radiusKm=5', { token: marketplace.token }), 'no-store')
      const session = sessionPair(await signIn({ token }))
      const viaCookie = await inject({ method: 'GET', url: '/api/v1/webhooks', headers: { cookie: session, ...CSRF } })
      answers.push(['GET /webhooks with the cookie', String(viaCookie.headers['cache-control']), 'no-store'])
      const who = await inject({ method: 'GET', url: '/console/session', headers: { cookie: session, ...CSRF } })
      answers.push(['GET /console/session', String(who.headers['cache-control']), 'no-store'])
      answers.push(['POST /console/session', String((await signIn({ token })).headers['cache-control']), 'no-store'])
      assert.deepEqual(
        answers.map(([what, got]) => [what, got]),
        answers.map(([what, , expected]) => [what, expected]),
      )
    })

    test('/console paths the router cannot decode answer 404 problem+json with the console’s headers', async () => {
      for (const url of ['/console/%zz', '/console/listings/%E0%A4%A', '/console/assets/%zz']) {
        const answer = await inject({ method: 'GET', url })
        assert.equal(answer.statusCode, 404, url)
        assert.match(String(answer.headers['content-type']), /^application\/problem\+json/)
        assert.equal(answer.json().type, '/problems/not-found')
        assert.equal(answer.headers['content-security-policy'], CONTENT_SECURITY_POLICY, url)
        assert.equal(answer.headers['x-content-type-options'], 'nosniff')
        assert.equal(answer.headers['x-frame-options'], 'DENY')
      }
      const elsewhere = await inject({ method: 'GET', url: '/api/v1/listing/%zz' })
      assert.equal(elsewhere.statusCode, 404)
      assert.equal(elsewhere.headers['content-security-policy'], undefined, 'the API is not the console')
    })
  })
}

test('the paths and domains a tossed cookie may have been set for', () => {
  assert.deepEqual(cookiePathsFor('/api/v1/listing'), ['/', '/api', '/api/', '/api/v1', '/api/v1/', '/api/v1/listing'])
  assert.deepEqual(cookiePathsFor('/console/'), ['/', '/console', '/console/'])
  assert.deepEqual(cookiePathsFor('/'), ['/'])
  assert.deepEqual(cookiePathsFor('/a;b/c'), ['/'], 'a path a cookie cannot name is skipped')
  assert.ok(cookiePathsFor(`/${'x/'.repeat(100)}`).length <= 12, 'bounded')
  assert.deepEqual(cookieDomainsFor('console.shop.example.com'), ['console.shop.example.com', 'shop.example.com', 'example.com'])
  assert.deepEqual(cookieDomainsFor('127.0.0.1'), [])
  assert.deepEqual(cookieDomainsFor('localhost'), [])
})
