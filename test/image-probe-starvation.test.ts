import assert from 'node:assert/strict'
import http, { Agent } from 'node:http'
import { after, describe, test } from 'node:test'
import type { DialectName } from '../src/db/connection.js'
import { item, listingBody } from './fixtures.js'
import { createTestDatabase, testDialects } from './helper.js'
import { pointersOf, postCreate, type CreateAnswer } from './http-support.js'
import { IMAGES, serveBytes, startImageServer, type ImageServer } from './image-server.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'

/**
 * Issue 25 item 4, against the service as a real process and a real image server whose /hang/… images never
 * answer: one provider's creates must not starve another's, a create's whole wait (queueing included) is bounded
 * by IMAGE_FETCH_TIMEOUT_MS, a provider's waiting work is bounded (429 beyond it, or beyond what the budget can
 * serve, while a burst it can serve is served), and the probes of a create whose client went away are cancelled,
 * unless another request shares them. Each attack is measured against the
 * service's own configured budget (ratios and the order of answers), never against a fixed speed.
 */

after(killAll)

const dialects = await testDialects()

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Polls `condition` every 20 ms until it holds; fails, saying `what`, if it does not within `ms`. */
async function eventually(condition: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms`)
    await sleep(20)
  }
}

interface Setup {
  server: ServerProcess
  images: ImageServer
  /** Tokens of the providers: [attacker, victim, …others]. */
  tokens: [string, string, ...string[]]
  agent: Agent
}

/** A fresh database with providers made by the real CLI, the service on it with `env`, and an image server. */
async function setUp(dialect: DialectName, env: Record<string, string>, providers = ['attacker', 'victim']): Promise<Setup> {
  const database = await createTestDatabase(dialect)
  after(() => database.drop())
  // One after the other: the first CLI run migrates the fresh database.
  const tokens: string[] = []
  for (const name of providers) {
    const made = await runCli(['provider', 'create', '--name', name], { DATABASE_URL: database.url }, { timeoutMs: 60_000 })
    assert.equal(made.code, 0, made.stderr)
    tokens.push(JSON.parse(made.stdout).token)
  }
  const images = await startImageServer()
  after(() => images.close())
  // A long wait for "ready": the machine is shared, and a start can be slow while other suites run.
  const server = await startServer({ DATABASE_URL: database.url, RATE_LIMIT_PER_MINUTE: '0', ...env }, { timeoutMs: 30_000 })
  after(() => server.stop('SIGKILL'))
  const agent = new Agent({ keepAlive: true })
  after(() => agent.destroy())
  return { server, images, tokens: tokens as Setup['tokens'], agent }
}

/** A create body whose brand and `items` items each name an image that never answers, distinct by `name`. */
function hangingBody(images: ImageServer, name: string, items: number): Record<string, any> {
  const body = listingBody({}, 0)
  body.brand.imageUrl = images.url(`/hang/${name}-brand`)
  body.items = Array.from({ length: items }, (_, i) => item(i, { imageUrl: images.url(`/hang/${name}-${i}`) }))
  return body
}

/** A create of `items` items whose images, and the brand's, answer at once, distinct by `name`. */
function menuOf(images: ImageServer, name: string, items: number): Record<string, any> {
  const body = listingBody({}, items)
  body.brand.imageUrl = images.url(`/img/${name}-brand.png`)
  body.items.forEach((entry: Record<string, unknown>, i: number) => (entry.imageUrl = images.url(`/img/${name}-${i}.png`)))
  return body
}

/** A one-image create whose image answers at once. */
function oneImageBody(images: ImageServer, name: string): Record<string, any> {
  const body = listingBody({}, 1)
  body.brand.imageUrl = images.url(`/img/${name}.png`)
  return body
}

const hangRequests = (images: ImageServer) => images.requests.filter((request) => request.path.startsWith('/hang/')).length

/** `answer` with the time it arrived. */
function timed(promise: Promise<CreateAnswer>): Promise<CreateAnswer & { at: number }> {
  return promise.then((answer) => ({ ...answer, at: performance.now() }))
}

/** The service's gauges of image work under way (GET /metrics). */
async function imageWork(server: ServerProcess): Promise<{ checks: number; running: number; waiting: number }> {
  const text = await (await fetch(`${server.baseUrl}/metrics`)).text()
  const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN)
  return {
    checks: value(/^listing_image_checks_in_progress (\d+)$/m),
    running: value(/^listing_image_probes_in_progress\{state="running"\} (\d+)$/m),
    waiting: value(/^listing_image_probes_in_progress\{state="waiting"\} (\d+)$/m),
  }
}

/** The provider share of the 64 process slots (fair-slots.ts): what one provider's fetches fill. */
const PROVIDER_SHARE = 48

// The two databases side by side; within one, the tests one after another, so that none is measured while
// another floods the machine.

/** A create sent on a connection of its own, whose answer nobody waits for: the test may abandon it (destroy). */
function sendCreate(port: number, token: string, body: unknown): http.ClientRequest {
  const bytes = Buffer.from(JSON.stringify(body))
  const request = http.request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/api/v1/listing/create',
    agent: false,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': bytes.length },
  })
  request.on('error', () => {})
  request.end(bytes)
  return request
}

describe('image probe starvation and orphaned work (issue 25 item 4)', { concurrency: true }, () => {
  for (const dialect of dialects) {
    describe(`[${dialect}]`, { concurrency: 1 }, () => {
      test("one provider's creates naming many never-answering images do not starve another provider's one-image create", { timeout: 60_000 }, async () => {
        const { server, images, tokens, agent } = await setUp(dialect, { IMAGE_FETCH_TIMEOUT_MS: '5000' })
        const [attacker, victim] = tokens
        const attacks = Array.from({ length: 30 }, (_, n) => timed(postCreate(server.port, agent, attacker, hangingBody(images, `starve-${n}`, 15))))
        for (const pending of attacks) pending.catch(() => {})
        await eventually(() => hangRequests(images) >= PROVIDER_SHARE, 10_000, 'the attacker filling its share of fetches')

        const answer = await timed(postCreate(server.port, agent, victim, oneImageBody(images, 'victim')))
        assert.equal(answer.status, 201, JSON.stringify(answer.body))
        const attacked = await Promise.all(attacks)
        // Creates that arrived once the attacker's first fetches had run long enough are refused at once (429);
        // the others were admitted, and fill the attacker's share of fetches (awaited above).
        const admitted = attacked.filter((attack) => attack.status !== 429)
        const firstAttackAnswered = Math.min(...admitted.map((a) => a.at))
        // The attacker's admitted creates end at their deadline: the victim's answer, with only its own image to
        // wait for, must come before any of them (a process-wide FIFO put it behind hundreds of hanging probes).
        assert.ok(answer.at < firstAttackAnswered, 'the victim was answered before the attacker’s first create')
        for (const attack of admitted) {
          assert.equal(attack.status, 400, JSON.stringify(attack.body))
          assert.equal(attack.body.type, '/problems/image-unavailable')
          assert.equal(pointersOf(attack.body).length, 16, 'every image not checked is named')
        }
        for (const attack of attacked.filter((a) => a.status === 429)) assert.equal(attack.body.type, '/problems/rate-limited')
      })

      test("a create's whole wait is bounded by IMAGE_FETCH_TIMEOUT_MS, queueing included", { timeout: 60_000 }, async () => {
        const budgetMs = 3000
        const { server, images, tokens, agent } = await setUp(dialect, { IMAGE_FETCH_TIMEOUT_MS: String(budgetMs) }, ['flood-0', 'flood-1', 'late'])
        // Two providers fill all 64 fetches with images that never answer, and queue more behind them.
        const floods = tokens
          .slice(0, 2)
          .flatMap((token, p) => Array.from({ length: 16 }, (_, n) => postCreate(server.port, agent, token, hangingBody(images, `flood-${p}-${n}`, 15))))
        for (const pending of floods) pending.catch(() => {})
        await eventually(() => hangRequests(images) >= 64, 10_000, 'every fetch slot taken')

        // A third provider, nothing measured of it yet, so admitted: 25 images, 8 at a time, waiting for a slot first.
        const body = hangingBody(images, 'bounded', 24)
        const sent = performance.now()
        const answer = await postCreate(server.port, agent, tokens[2] as string, body)
        const waitedMs = performance.now() - sent
        assert.equal(answer.status, 400, JSON.stringify(answer.body))
        assert.equal(answer.body.type, '/problems/image-unavailable')
        assert.deepEqual(pointersOf(answer.body), ['/brand/imageUrl', ...Array.from({ length: 24 }, (_, i) => `/items/${i}/imageUrl`)])
        assert.match(answer.body.errors[0].detail, new RegExp(`within ${budgetMs} ms`))
        // Its own budget, not the queue ahead of it and its rounds of fetches: without the create's deadline it
        // waited for a slot, then 4 rounds of 3 s.
        assert.ok(waitedMs < 2 * budgetMs, `answered after ${Math.round(waitedMs)} ms, budget ${budgetMs} ms`)
        await Promise.all(floods)
      })

      test('an honest burst is served: 10 concurrent creates of 51 images each that answer at once are all 201', { timeout: 60_000 }, async () => {
        // The defaults: IMAGE_FETCH_TIMEOUT_MS and IMAGE_QUEUE_PER_PROVIDER as an operator leaves them.
        const { server, images, tokens, agent } = await setUp(dialect, {})
        const answers = await Promise.all(Array.from({ length: 10 }, (_, n) => postCreate(server.port, agent, tokens[0], menuOf(images, `menu-${n}`, 50))))
        assert.deepEqual(
          answers.map((answer) => answer.status),
          Array.from({ length: 10 }, () => 201),
          JSON.stringify(answers.find((answer) => answer.status !== 201)?.body),
        )
        assert.equal(new Set(images.requests.map((request) => request.path)).size, 510, 'every image was fetched')
      })

      test("a provider whose images do not answer: its next creates are refused at once (429), not another's", { timeout: 60_000 }, async () => {
        const budgetMs = 3000
        const { server, images, tokens, agent } = await setUp(dialect, { IMAGE_FETCH_TIMEOUT_MS: String(budgetMs) })
        const [attacker, victim] = tokens
        const first = postCreate(server.port, agent, attacker, hangingBody(images, 'slow', 100))
        first.catch(() => {})
        await eventually(() => hangRequests(images) >= 8, 10_000, 'the first create fetching its images')
        // Half the budget: its fetches have run that long, so 51 more images, 8 at a time, cannot be checked in time.
        await sleep(budgetMs / 2)

        const fetchedBefore = images.requests.length
        const refused = await postCreate(server.port, agent, attacker, menuOf(images, 'refused', 50))
        assert.equal(refused.status, 429, JSON.stringify(refused.body))
        assert.equal(refused.body.type, '/problems/rate-limited')
        assert.match(refused.body.detail, new RegExp(`would not be checked within ${budgetMs} ms`))
        assert.equal(refused.headers['retry-after'], '3')
        assert.equal(images.requests.length, fetchedBefore, 'a refused create fetches nothing')

        const other = await postCreate(server.port, agent, victim, menuOf(images, 'victim', 50))
        assert.equal(other.status, 201, JSON.stringify(other.body))

        assert.equal((await first).status, 400)
        // Nothing of the provider's is under way any more: it is measured afresh.
        const retried = await postCreate(server.port, agent, attacker, menuOf(images, 'after-the-wait', 50))
        assert.equal(retried.status, 201, JSON.stringify(retried.body))
      })

      test("creates beyond a provider's waiting bound get 429 with Retry-After; other providers are not refused", { timeout: 60_000 }, async () => {
        const { server, images, tokens, agent } = await setUp(dialect, {
          IMAGE_FETCH_TIMEOUT_MS: '3000',
          IMAGE_QUEUE_PER_PROVIDER: '101',
        })
        const [attacker, victim] = tokens
        // 101 images: exactly the bound.
        const first = postCreate(server.port, agent, attacker, hangingBody(images, 'bound', 100))
        first.catch(() => {})
        // 8 at a time per create (the prober's perRequestConcurrency).
        await eventually(() => hangRequests(images) >= 8, 10_000, 'the first create waiting on its images')

        const fetchedBefore = images.requests.length
        const refused = await postCreate(server.port, agent, attacker, oneImageBody(images, 'over-the-bound'))
        assert.equal(refused.status, 429, JSON.stringify(refused.body))
        assert.match(String(refused.headers['content-type']), /^application\/problem\+json/)
        assert.equal(refused.body.type, '/problems/rate-limited')
        assert.match(refused.body.detail, /101 images/)
        // Every create waiting ends by its deadline, so that is when to retry.
        assert.equal(refused.headers['retry-after'], '3')
        assert.equal(images.requests.length, fetchedBefore, 'a refused create fetches nothing')

        const other = await postCreate(server.port, agent, victim, oneImageBody(images, 'other-provider'))
        assert.equal(other.status, 201, JSON.stringify(other.body))

        assert.equal((await first).status, 400)
        const retried = await postCreate(server.port, agent, attacker, oneImageBody(images, 'after-the-wait'))
        assert.equal(retried.status, 201, JSON.stringify(retried.body))
      })

      test('abandoned creates: their probes are cancelled, waiting ones never start', { timeout: 60_000 }, async () => {
        // A budget far longer than the test: only cancellation can close these fetches in time.
        const { server, images, tokens } = await setUp(dialect, { IMAGE_FETCH_TIMEOUT_MS: '60000' })
        const clients: http.ClientRequest[] = []
        for (let n = 0; n < 20; n++) {
          clients.push(sendCreate(server.port, tokens[0], hangingBody(images, `abandoned-${n}`, 7)))
        }
        // 160 images: the provider's share of fetches is running, the rest wait for a slot.
        await eventually(() => images.openRequests() >= PROVIDER_SHARE, 10_000, 'the creates fetching their images')

        for (const client of clients) client.destroy()
        // The service's own account first: no create waits on images, no probe runs or waits for a slot.
        await eventually(
          async () => {
            const work = await imageWork(server)
            return work.checks === 0 && work.running === 0 && work.waiting === 0
          },
          10_000,
          'the service dropping the abandoned creates’ probes',
        )
        await eventually(() => images.openRequests() === 0, 10_000, 'every fetch of the abandoned creates closed')
        assert.ok(hangRequests(images) < 160, `${hangRequests(images)} of the 160 images were fetched`)

        // The service is whole: another provider's create answers at once, and nothing of the abandoned creates
        // started meanwhile (it would hang, open, for its 60 s budget).
        const agent = new Agent({ keepAlive: false })
        const answer = await postCreate(server.port, agent, tokens[1], oneImageBody(images, 'after-abandon'))
        assert.equal(answer.status, 201, JSON.stringify(answer.body))
        assert.equal(images.openRequests(), 0, 'no probe of an abandoned create started after its client left')
      })

      test('abandoned creates: a probe shared with a request still waiting survives; it is fetched once', { timeout: 60_000 }, async () => {
        let release!: () => void
        const released = new Promise<void>((resolve) => (release = resolve))
        let closedBeforeRelease = false
        let isReleased = false
        const images = await startImageServer('127.0.0.1', {
          '/held/shared.png': (request, response) => {
            response.once('close', () => (closedBeforeRelease ||= !isReleased))
            void released.then(() => serveBytes(request, response, IMAGES.png, { contentType: 'image/png' }))
          },
        })
        after(() => images.close())
        const { server, tokens } = await setUp(dialect, { IMAGE_FETCH_TIMEOUT_MS: '20000' })
        const metricsReused = async () => {
          const text = await (await fetch(`${server.baseUrl}/metrics`)).text()
          return Number(/^listing_image_probe_reuses_total\{source="in-flight"\} (\d+)/m.exec(text)?.[1] ?? 0)
        }

        // The leaver names the shared image and one of its own that never answers.
        const leaverBody = listingBody({}, 1)
        leaverBody.brand.imageUrl = images.url('/held/shared.png')
        leaverBody.items[0].imageUrl = images.url('/hang/leaver-own')
        const leaver = sendCreate(server.port, tokens[0], leaverBody)
        const requestOf = (path: string) => images.requests.find((request) => request.path === path)
        await eventually(() => !!requestOf('/held/shared.png') && !!requestOf('/hang/leaver-own'), 10_000, 'both probes started')

        const stayerBody = listingBody({}, 1)
        stayerBody.brand.imageUrl = images.url('/held/shared.png')
        const agent = new Agent({ keepAlive: false })
        const stayer = postCreate(server.port, agent, tokens[1], stayerBody)
        stayer.catch(() => {})
        await eventually(async () => (await metricsReused()) >= 1, 10_000, 'the second request joining the probe under way')

        leaver.destroy()
        // Its own probe is cancelled (in the same step as its leaving the shared one).
        await eventually(() => requestOf('/hang/leaver-own')?.closed === true, 10_000, "the leaver's own probe cancelled")
        assert.equal(closedBeforeRelease, false, 'the shared fetch is still open')

        isReleased = true
        release()
        const answer = await stayer
        assert.equal(answer.status, 201, JSON.stringify(answer.body))
        assert.equal(images.requests.filter((request) => request.path === '/held/shared.png').length, 1, 'fetched once')
      })
    })
  }
})
