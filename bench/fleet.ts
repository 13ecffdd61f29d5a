/**
 * Issue 27's target: "Through PgBouncer in transaction mode, 3 instances: 0 5xx, no duplicate delivery, no stuck
 * expiry over 60 s of mixed load." A correctness run, not a speed one:
 *
 * - one fresh PostgreSQL database (the tests' createTestDatabase; dropped at the end, on failure and Ctrl-C too),
 *   migrated once with `listing-service migrate`, straight to PostgreSQL; --providers providers made with
 *   `listing-service provider create`;
 * - one PgBouncer in transaction mode in front of it (test/pgbouncer-support.ts) and three `serve --no-migrate`
 *   processes on it, with short listing lifetimes (LISTING_TTL_*_SECONDS) so that hundreds of listings expire
 *   during the run, and every instance's background jobs (expiry sweep every 2 s, webhook worker) running at once;
 * - a webhook receiver in this process, registered through the API as an endpoint of every provider, answering
 *   200 at once and recording each delivery's `webhook-id` (signature checked with `standardwebhooks`);
 * - --duration seconds of a mix drawn per request, --connections per instance: 40% pages (a random page of the
 *   provider, limit 10), 25% creates (1–3 items, unique referenceId, `timed` or `priority_timed`), 15% PATCH
 *   (quantities, a quarter of them selling out, If-Match with the version last seen), 10% withdrawals (If-Match
 *   too), 10% event feed reads following each provider's cursor;
 * - then the drain: polling the database until every event is delivered to its endpoint, nothing is owed, and
 *   every listing not withdrawn has its expiry recorded (all have expired by then), bounded by --drain-timeout.
 *
 * Targets (exit 1 if one fails): no 5xx and no socket error; every event received exactly once by its provider's
 * endpoint (none missing, no duplicate); no stuck expiry: none left unrecorded after the drain, none overdue by
 * more than the API's 10 s while the load ran (sampled every second), each recorded by exactly one event. Besides,
 * the feed read to its end must hold every event of the provider once. 412 and 409 are expected answers: PATCHes
 * and withdrawals race each other and the expiries on purpose.
 *
 *   npm run bench:fleet                      (60 s)
 *   npm run bench:fleet -- --duration 20 --connections 4
 */
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { Pool } from 'undici'
import { createTestDatabase } from '../test/helper.js'
import { startImageServer } from '../test/image-server.js'
import { pgbouncerVersion, startPgBouncer } from '../test/pgbouncer-support.js'
import { runCli } from '../test/process.js'
import { cleanUpOnSignals, listingBody, machine, percentile, startService, writeResult, type RunningService } from './lib.js'
import { signed } from './webhook-receiver.js'

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    /** Concurrent requests per instance. */
    connections: { type: 'string', default: '8' },
    providers: { type: 'string', default: '5' },
    'ttl-timed': { type: 'string', default: '20' },
    'ttl-priority': { type: 'string', default: '10' },
    'drain-timeout': { type: 'string', default: '180' },
    /** PgBouncer's server connections (default_pool_size): fewer than the three instances' pools together (30). */
    'pool-size': { type: 'string', default: '20' },
  },
})
const DURATION_S = Number(args.duration)
const CONNECTIONS = Number(args.connections)
const PROVIDERS = Number(args.providers)
const TTL_TIMED_S = Number(args['ttl-timed'])
const TTL_PRIORITY_S = Number(args['ttl-priority'])
const DRAIN_TIMEOUT_S = Number(args['drain-timeout'])
const POOL_SIZE = Number(args['pool-size'])
const INSTANCES = 3
/** docs/api.md#events: an expiry is recorded within seconds; expiry.ts promises 10 s. */
const EXPIRY_DEADLINE_MS = 10_000

type Op = 'page' | 'create' | 'patch' | 'withdraw' | 'events'
const MIX: Array<[Op, number]> = [
  ['page', 40],
  ['create', 25],
  ['patch', 15],
  ['withdraw', 10],
  ['events', 10],
]

/** Every resource's undoing, newest first: at the end, on failure, and on Ctrl-C. */
const cleanups = cleanUpOnSignals('stopping the services and dropping the database')

// ---- the webhook receiver ----

interface EndpointLog {
  secret: string
  /** Arrivals by webhook-id. */
  arrivals: Map<string, number>
  /** Arrivals by event type (every arrival, duplicates included). */
  types: Map<string, number>
  badSignatures: number
  /** webhook-id not the id of the event in the body. */
  idMismatches: number
}

interface Receiver {
  url: string
  /** By provider index: each provider's endpoint has its own path. */
  endpoints: Map<number, EndpointLog>
  /** Arrivals at a path no endpoint has. */
  strays: number
  close(): Promise<void>
}

async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = { url: '', endpoints: new Map(), strays: 0, close: async () => {} }
  const server = createServer({ keepAliveTimeout: 60_000 }, (request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      // Answered first: the service's attempt succeeds on the status, whatever the checks below find.
      response.writeHead(204).end()
      const endpoint = receiver.endpoints.get(Number(/^\/hooks\/(\d+)$/.exec(request.url ?? '')?.[1] ?? NaN))
      if (!endpoint) {
        receiver.strays++
        return
      }
      const body = Buffer.concat(chunks).toString('utf8')
      const id = String(request.headers['webhook-id'])
      endpoint.arrivals.set(id, (endpoint.arrivals.get(id) ?? 0) + 1)
      let event: { id?: string; type?: string } = {}
      try {
        event = JSON.parse(body)
      } catch {
        // counted as a mismatch below
      }
      if (event.id !== id) endpoint.idMismatches++
      endpoint.types.set(String(event.type), (endpoint.types.get(String(event.type)) ?? 0) + 1)
      if (!signed(body, request.headers, endpoint.secret)) endpoint.badSignatures++
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  receiver.close = () =>
    new Promise((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  return receiver
}

// ---- what the load generator knows of each provider ----

interface KnownListing {
  id: string
  /** The version last answered (If-Match sends it). */
  version: number
  expiresAtMs: number
  items: number
  /** Withdrawn, or answered 409 listing-closed: no PATCH or withdrawal is sent for it any more. */
  closed: boolean
}

interface Provider {
  index: number
  id: string
  token: string
  listings: KnownListing[]
  /** Listings created (201): the pages drawn from. */
  created: number
  feedCursor: string | undefined
  /** One feed read at a time per provider: two from one cursor would both get the same events. */
  feedBusy: boolean
  feedIds: Map<string, number>
}

interface Tally {
  /** `${op} ${status}` (status 0: a socket error or timeout) → count. */
  byOpStatus: Map<string, number>
  requests: number
  errors: string[]
}

const bump = (map: Map<string, number>, key: string, by = 1) => map.set(key, (map.get(key) ?? 0) + by)

function pickOp(): Op {
  let pick = Math.random() * 100
  return MIX.find(([, weight]) => (pick -= weight) < 0)?.[0] ?? 'page'
}

const pickOne = <T>(list: T[]): T | undefined => list[Math.floor(Math.random() * list.length)]

const nonce = randomUUID().slice(0, 8)
let sequence = 0

/** A listing that may still be changed: not closed, and not about to expire by our clock. */
function liveListing(provider: Provider): KnownListing | undefined {
  const now = Date.now()
  // A few tries at random, then give up: the mix then sends a page instead, counted as such.
  for (let i = 0; i < 8; i++) {
    const listing = pickOne(provider.listings)
    if (listing && !listing.closed && listing.expiresAtMs > now + 1000) return listing
  }
  return undefined
}

/** One request of the mix to one instance; every answer is counted, by its real kind. */
async function oneRequest(pool: Pool, providers: Provider[], brandImageUrl: string, tally: Tally): Promise<void> {
  const provider = pickOne(providers) as Provider
  const auth = { authorization: `Bearer ${provider.token}` }
  let op = pickOp()
  let listing: KnownListing | undefined
  let feedOf: Provider | undefined
  if (op === 'patch' || op === 'withdraw') {
    listing = liveListing(provider)
    if (!listing) op = 'page'
  }
  if (op === 'events') {
    feedOf = providers.find((p) => !p.feedBusy)
    if (feedOf) feedOf.feedBusy = true
  }
  try {
    let status: number
    switch (op) {
      case 'page': {
        const page = 1 + Math.floor(Math.random() * Math.max(1, Math.ceil(provider.created / 10)))
        const answer = await pool.request({ method: 'GET', path: `/api/v1/listing?page=${page}&limit=10`, headers: auth })
        status = answer.statusCode
        await answer.body.dump()
        break
      }
      case 'create': {
        const items = 1 + Math.floor(Math.random() * 3)
        const body = listingBody(
          `fleet-${nonce}-${++sequence}`,
          brandImageUrl,
          Array.from({ length: items }, () => undefined),
        )
        body.listingDetails.type = Math.random() < 0.5 ? 'timed' : 'priority_timed'
        const answer = await pool.request({
          method: 'POST',
          path: '/api/v1/listing/create',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        status = answer.statusCode
        const created = (await answer.body.json().catch(() => undefined)) as { listingId?: string; expiresAtUnix?: number } | undefined
        if (status === 201 && created?.listingId !== undefined) {
          provider.listings.push({ id: created.listingId, version: 1, expiresAtMs: Number(created.expiresAtUnix) * 1000, items, closed: false })
          provider.created++
        }
        break
      }
      case 'patch':
      case 'withdraw': {
        const target = listing as KnownListing
        const soldOut = Math.random() < 0.25
        const answer = await pool.request(
          op === 'patch'
            ? {
                method: 'PATCH',
                path: `/api/v1/listing/${target.id}`,
                headers: { ...auth, 'content-type': 'application/json', 'if-match': `"${target.version}"` },
                body: JSON.stringify({
                  items: Array.from({ length: target.items }, (_, position) => ({ position, quantity: soldOut ? 0 : 1 + Math.floor(Math.random() * 20) })),
                }),
              }
            : { method: 'POST', path: `/api/v1/listing/${target.id}/withdraw`, headers: { ...auth, 'if-match': `"${target.version}"` } },
        )
        status = answer.statusCode
        const body = (await answer.body.json().catch(() => undefined)) as { version?: number } | undefined
        // 412 carries the current ETag: the next try sends it. 409: expired or withdrawn, closed for good.
        const etag = /^"(\d+)"$/.exec(String(answer.headers.etag))?.[1]
        if (status === 200 && body?.version !== undefined) target.version = Math.max(target.version, body.version)
        else if (status === 412 && etag !== undefined) target.version = Math.max(target.version, Number(etag))
        if ((status === 200 && op === 'withdraw') || status === 409) target.closed = true
        break
      }
      case 'events': {
        const reader = feedOf ?? provider
        const after = feedOf?.feedCursor
        const answer = await pool.request({
          method: 'GET',
          path: `/api/v1/events?limit=50${after === undefined ? '' : `&after=${after}`}`,
          headers: { authorization: `Bearer ${reader.token}` },
        })
        status = answer.statusCode
        const page = (await answer.body.json().catch(() => undefined)) as { data?: Array<{ id: string }>; nextCursor?: string | null } | undefined
        // Only a read that held the provider's feed follows its cursor; the others (every feed busy) just read.
        if (feedOf && status === 200 && page?.data) {
          for (const event of page.data) bump(feedOf.feedIds, event.id)
          if (page.nextCursor) feedOf.feedCursor = page.nextCursor
        }
        break
      }
    }
    bump(tally.byOpStatus, `${op} ${status}`)
    if (status >= 500 && tally.errors.length < 20) tally.errors.push(`${op} answered ${status}`)
  } catch (error) {
    bump(tally.byOpStatus, `${op} 0`)
    if (tally.errors.length < 20) tally.errors.push(`${op}: ${(error as Error).message}`)
  } finally {
    tally.requests++
    if (feedOf) feedOf.feedBusy = false
  }
}

/** Reads a provider's feed on from its cursor until it is empty: every event must then be in feedIds once. */
async function readFeedToEnd(pool: Pool, provider: Provider): Promise<void> {
  for (;;) {
    const after = provider.feedCursor
    const answer = await pool.request({
      method: 'GET',
      path: `/api/v1/events?limit=100${after === undefined ? '' : `&after=${after}`}`,
      headers: { authorization: `Bearer ${provider.token}` },
    })
    if (answer.statusCode !== 200) throw new Error(`the feed answered ${answer.statusCode}: ${await answer.body.text()}`)
    const page = (await answer.body.json()) as { data: Array<{ id: string }>; nextCursor: string | null }
    for (const event of page.data) bump(provider.feedIds, event.id)
    if (page.nextCursor === null) return
    provider.feedCursor = page.nextCursor
  }
}

// ---- the run ----

const startLoad = loadavg()
const started = new Date()
const images = await startImageServer()
cleanups.add(() => images.close())
const receiver = await startReceiver()
cleanups.add(() => receiver.close())
const bouncer = await startPgBouncer({ poolMode: 'transaction', poolSize: POOL_SIZE })
cleanups.add(() => bouncer.stop())
const fresh = await createTestDatabase('postgres')
cleanups.add(() => fresh.drop())
// The bench's own reads go straight to PostgreSQL: what it checks must not depend on the PgBouncer under test.
const db = new pg.Pool({ connectionString: fresh.url, max: 2 })
// The drop (with force) can reach a connection the pool is still closing: its error is the drop, nothing to report.
db.on('error', () => {})
cleanups.add(() => db.end())
const count = async (text: string, values: unknown[] = []) => Number(((await db.query(text, values)).rows[0] as { n: string }).n)

let failed = true
try {
  const cliOptions = { timeoutMs: 120_000 } // the machine is shared: a CLI start may take long
  const migrated = await runCli(['migrate'], { DATABASE_URL: fresh.url }, cliOptions)
  if (migrated.code !== 0) throw new Error(`migrate exited with ${migrated.code}: ${migrated.stderr}`)
  const providers: Provider[] = []
  for (let index = 0; index < PROVIDERS; index++) {
    const made = await runCli(['provider', 'create', '--name', `Fleet ${index}`, '--industry', 'bakery'], { DATABASE_URL: fresh.url }, cliOptions)
    if (made.code !== 0) throw new Error(`provider create exited with ${made.code}: ${made.stderr}`)
    const { id, token } = JSON.parse(made.stdout) as { id: string; token: string }
    providers.push({ index, id, token, listings: [], created: 0, feedCursor: undefined, feedBusy: false, feedIds: new Map() })
  }

  const env = {
    DATABASE_URL: bouncer.via(fresh.url),
    DATABASE_POOLER_PREPARES: String(bouncer.keepsPrepared),
    IMAGE_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    LISTING_TTL_TIMED_SECONDS: String(TTL_TIMED_S),
    LISTING_TTL_PRIORITY_TIMED_SECONDS: String(TTL_PRIORITY_S),
  }
  const services: RunningService[] = []
  for (let i = 0; i < INSTANCES; i++) {
    const service = await startService(env, providers[0]?.token, undefined, ['--no-migrate'])
    cleanups.add(() => service.stop())
    services.push(service)
  }
  // Set by an interrupted run's clean-up: a request on a closed pool fails at once, so a worker left looping would
  // spin on rejections that never yield to the event loop, and the clean-up after it would never run.
  let interrupted = false
  const pools = services.map((service) => {
    const pool = new Pool(service.baseUrl, { connections: CONNECTIONS, headersTimeout: 30_000, bodyTimeout: 30_000 })
    cleanups.add(() => {
      interrupted = true
      return pool.destroy() // what is in flight is not waited for
    })
    return pool
  })

  // Each provider's endpoint, registered through a different instance each.
  for (const provider of providers) {
    const pool = pools[provider.index % INSTANCES] as Pool
    const answer = await pool.request({
      method: 'POST',
      path: '/api/v1/webhooks',
      headers: { authorization: `Bearer ${provider.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `${receiver.url}/hooks/${provider.index}` }),
    })
    const body = (await answer.body.json()) as { secret?: string }
    if (answer.statusCode !== 201 || body.secret === undefined)
      throw new Error(`registering an endpoint answered ${answer.statusCode}: ${JSON.stringify(body)}`)
    receiver.endpoints.set(provider.index, { secret: body.secret, arrivals: new Map(), types: new Map(), badSignatures: 0, idMismatches: 0 })
  }

  // Overdue expiries sampled every second while the load runs (and drains): the "stuck" the API rules out.
  const overdueSql = `select count(*) as n from listings where expiry_recorded = 0 and withdrawn_at_ms is null and expires_at_unix * 1000 < $1`
  let maxOverdue = 0
  let maxOwed = 0
  let sampling = true
  // Its failure is thrown where it is awaited: unhandled meanwhile (after an interrupted run's clean-up closed the
  // database pool), it would end the process before that clean-up had dropped the database.
  const sampler = (async () => {
    while (sampling) {
      maxOverdue = Math.max(maxOverdue, await count(overdueSql, [Date.now() - EXPIRY_DEADLINE_MS]))
      maxOwed = Math.max(maxOwed, await count('select count(*) as n from webhook_deliveries'))
      await sleep(1000)
    }
  })().then(
    () => undefined,
    (error: unknown) => error as Error,
  )

  console.error(
    `${INSTANCES} instances through PgBouncer (transaction mode, pool ${POOL_SIZE}) on ${new URL(fresh.url).pathname.slice(1)}; ${DURATION_S} s of load, ${CONNECTIONS} connections per instance`,
  )
  const tallies: Tally[] = services.map(() => ({ byOpStatus: new Map(), requests: 0, errors: [] }))
  const brandImageUrl = images.url('/img/brand.png')
  const loadStart = performance.now()
  const deadline = loadStart + DURATION_S * 1000
  const progress = setInterval(() => {
    const done = tallies.reduce((n, t) => n + t.requests, 0)
    console.error(
      `  ${((performance.now() - loadStart) / 1000).toFixed(0)} s: ${done} requests, overdue expiries at most ${maxOverdue}, owed deliveries at most ${maxOwed}`,
    )
  }, 10_000)
  await Promise.all(
    pools.flatMap((pool, i) =>
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < deadline && !interrupted) await oneRequest(pool, providers, brandImageUrl, tallies[i] as Tally)
      }),
    ),
  )
  clearInterval(progress)
  const loadSeconds = (performance.now() - loadStart) / 1000
  const owedAtEnd = await count('select count(*) as n from webhook_deliveries')
  const unrecordedAtEnd = await count(overdueSql, [Date.now()])
  console.error(`load done in ${loadSeconds.toFixed(1)} s; draining (${owedAtEnd} deliveries owed, ${unrecordedAtEnd} due expiries unrecorded)`)

  // The drain: every event delivered, nothing owed, and every listing not withdrawn expired and recorded.
  const drainStart = performance.now()
  const eventsOf = async () =>
    new Map(
      (await db.query<{ provider_id: string; n: string }>('select owner_id as provider_id, count(*) as n from events group by owner_id')).rows.map((r) => [
        r.provider_id,
        Number(r.n),
      ]),
    )
  let drained = false
  let lastState = ''
  while ((performance.now() - drainStart) / 1000 < DRAIN_TIMEOUT_S) {
    const unrecorded = await count('select count(*) as n from listings where expiry_recorded = 0 and withdrawn_at_ms is null')
    const owed = await count('select count(*) as n from webhook_deliveries')
    const events = await eventsOf()
    const undelivered = providers.reduce((n, p) => n + Math.max(0, (events.get(p.id) ?? 0) - (receiver.endpoints.get(p.index)?.arrivals.size ?? 0)), 0)
    lastState = `${unrecorded} listings without a recorded expiry, ${owed} deliveries owed, ${undelivered} events not received`
    if (unrecorded === 0 && owed === 0 && undelivered === 0) {
      drained = true
      break
    }
    await sleep(500)
  }
  const drainSeconds = (performance.now() - drainStart) / 1000
  sampling = false
  const samplerError = await sampler
  if (samplerError) throw samplerError
  console.error(drained ? `drained in ${drainSeconds.toFixed(1)} s` : `not drained after ${DRAIN_TIMEOUT_S} s: ${lastState}`)
  for (const provider of providers) await readFeedToEnd(pools[0] as Pool, provider)

  // ---- what happened, from the database and the receiver ----

  const eventRows = (await db.query<{ id: string; provider_id: string; type: string }>('select id, owner_id as provider_id, type from events')).rows
  const eventTypes = new Map<string, number>()
  for (const row of eventRows) bump(eventTypes, row.type)
  const receivedTypes = new Map<string, number>()
  let missing = 0
  let duplicates = 0
  let unexpected = 0
  let badSignatures = 0
  let idMismatches = 0
  const duplicated: Array<{ endpoint: number; id: string; times: number }> = []
  const byProvider = new Map(providers.map((p) => [p.id, p]))
  const eventsByProvider = new Map<number, Set<string>>(providers.map((p) => [p.index, new Set()]))
  for (const row of eventRows) eventsByProvider.get(byProvider.get(row.provider_id)?.index ?? -1)?.add(row.id)
  let feedMissing = 0
  let feedDuplicates = 0
  for (const provider of providers) {
    const endpoint = receiver.endpoints.get(provider.index) as EndpointLog
    const expected = eventsByProvider.get(provider.index) as Set<string>
    for (const id of expected) {
      if (!endpoint.arrivals.has(id)) missing++
      if (!provider.feedIds.has(id)) feedMissing++
    }
    for (const [id, times] of endpoint.arrivals) {
      if (!expected.has(id)) unexpected++
      if (times > 1) {
        duplicates += times - 1
        duplicated.push({ endpoint: provider.index, id, times })
      }
    }
    for (const times of provider.feedIds.values()) if (times > 1) feedDuplicates += times - 1
    for (const [type, n] of endpoint.types) bump(receivedTypes, type, n)
    badSignatures += endpoint.badSignatures
    idMismatches += endpoint.idMismatches
  }
  // A duplicate explained: the attempts the service recorded for it (a success recorded twice would be a double claim).
  const duplicateAttempts = duplicated.length
    ? (
        await db.query<{ event_id: string; outcome: string; n: string }>(
          'select event_id, outcome, count(*) as n from webhook_attempts where event_id = any($1) group by event_id, outcome',
          [duplicated.map((d) => d.id)],
        )
      ).rows
    : []
  const attempts = (await db.query<{ outcome: string; n: string }>('select outcome, count(*) as n from webhook_attempts group by outcome')).rows

  const stuckAfterDrain = await count(
    'select count(*) as n from listings where expiry_recorded = 0 and withdrawn_at_ms is null and expires_at_unix * 1000 <= $1',
    [Date.now()],
  )
  const expiredListings = await count('select count(*) as n from listings where expiry_recorded = 1')
  const withdrawnListings = await count('select count(*) as n from listings where withdrawn_at_ms is not null')
  const allListings = await count('select count(*) as n from listings')
  const doubleExpiries = await count(
    `select count(*) as n from (select listing_id from events where type = 'listing.expired' group by listing_id having count(*) > 1) as twice`,
  )
  const expiredWithoutEvent = await count(
    `select count(*) as n from listings l where l.expiry_recorded = 1 and not exists (select 1 from events e where e.listing_id = l.id and e.type = 'listing.expired')`,
  )
  // From the moment a listing expired to its event's commit, for the expiries due while the load ran.
  const loadEndMs = Date.now() - drainSeconds * 1000
  const lags = (
    await db.query<{ lag: string; due: string }>(
      `select e.created_at_ms - l.expires_at_unix * 1000 as lag, l.expires_at_unix * 1000 as due from events e join listings l on l.id = e.listing_id where e.type = 'listing.expired'`,
    )
  ).rows.map((row) => ({ lag: Number(row.lag), due: Number(row.due) }))
  const lagsAll = lags.map((l) => l.lag)
  const expiredDuringLoad = lags.filter((l) => l.due <= loadEndMs).length

  // ---- the report ----

  const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
  const statuses = [...new Set(tallies.flatMap((t) => [...t.byOpStatus.keys()].map((k) => Number(k.split(' ')[1]))))].sort((a, b) => a - b)
  const statusOf = (tally: Tally, status: number, op?: Op) =>
    [...tally.byOpStatus]
      .filter(([key]) => Number(key.split(' ')[1]) === status && (op === undefined || key.startsWith(`${op} `)))
      .reduce((n, [, c]) => n + c, 0)
  const totalRequests = tallies.reduce((n, t) => n + t.requests, 0)
  const fiveXx = tallies.reduce((n, t) => n + statuses.filter((s) => s >= 500).reduce((m, s) => m + statusOf(t, s), 0), 0)
  const socketErrors = tallies.reduce((n, t) => n + statusOf(t, 0), 0)
  const label = (s: number) => (s === 0 ? 'socket error' : String(s))

  const targets: Array<[boolean, string]> = [
    [fiveXx === 0, `5xx answers: ${fiveXx} (target 0)`],
    [socketErrors === 0, `socket errors and timeouts: ${socketErrors} (target 0)`],
    [duplicates === 0, `duplicate deliveries (one webhook-id received again after a 2xx): ${duplicates} (target 0)`],
    [missing === 0 && unexpected === 0, `events never delivered: ${missing}; deliveries of no event of that provider: ${unexpected} (target 0)`],
    [badSignatures === 0 && idMismatches === 0, `deliveries with a bad signature: ${badSignatures}; webhook-id not the event's id: ${idMismatches} (target 0)`],
    [drained, `drained within ${DRAIN_TIMEOUT_S} s: ${drained ? `yes, in ${fmt(drainSeconds, 1)} s` : `no (${lastState})`}`],
    [stuckAfterDrain === 0, `stuck expiries after the drain (expired, not withdrawn, not recorded): ${stuckAfterDrain} (target 0)`],
    [
      maxOverdue === 0,
      `expiries overdue by more than ${EXPIRY_DEADLINE_MS / 1000} s at any 1 s sample, load and drain: at most ${maxOverdue} at once (target 0)`,
    ],
    [
      doubleExpiries === 0 && expiredWithoutEvent === 0,
      `listings with two listing.expired events: ${doubleExpiries}; recorded without one: ${expiredWithoutEvent} (target 0)`,
    ],
    [feedMissing === 0 && feedDuplicates === 0, `the feed, read to its end by cursor: ${feedMissing} events missing, ${feedDuplicates} twice (target 0)`],
  ]
  const ok = targets.every(([passed]) => passed)
  const typeNames = [...new Set([...eventTypes.keys(), ...receivedTypes.keys()])].sort()
  const lines = [
    `# Fleet: 3 instances through PgBouncer (transaction mode), mixed load — ${started.toISOString()}`,
    '',
    `Machine: ${machine()}. Load average at start: ${startLoad.map((l) => l.toFixed(2)).join(', ')} (1, 5, 15 min): the machine is shared; this run checks correctness, not speed.`,
    `Command: \`npm run bench:fleet${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`.`,
    '',
    `Setup: one fresh PostgreSQL database, migrated once with \`listing-service migrate\` straight to PostgreSQL; ${PROVIDERS} providers (\`provider create\`); ` +
      `${pgbouncerVersion()} in transaction mode (default_pool_size ${POOL_SIZE}${bouncer.keepsPrepared ? ', max_prepared_statements 200' : ''}) in front of it; ${INSTANCES} \`serve --no-migrate\` processes with DATABASE_URL at the PgBouncer${bouncer.keepsPrepared ? ' and DATABASE_POOLER_PREPARES=true' : ''}, ` +
      `LISTING_TTL_TIMED_SECONDS=${TTL_TIMED_S}, LISTING_TTL_PRIORITY_TIMED_SECONDS=${TTL_PRIORITY_S} (half the creates each type), every instance sweeping expiries every 2 s and delivering webhooks (poll 250 ms, not configurable). ` +
      `One webhook receiver in the bench's process (answers 204 at once, checks signatures with \`standardwebhooks\`), registered through the API as the one endpoint of every provider, all event types.`,
    '',
    `Load: ${fmt(loadSeconds, 1)} s, ${CONNECTIONS} concurrent requests per instance (a Node generator on undici, one request per connection at a time), each request drawn at random: ` +
      `${MIX.map(([op, w]) => `${w}% ${op}`).join(', ')}; a random provider each. Pages: a random page of the provider's, limit 10. Creates: 1–3 items, unique referenceId. ` +
      `PATCH: every item's quantity (a quarter of them 0: sold out), If-Match with the version last seen; withdraw: If-Match too; both on a listing not yet closed by what the generator knows (412 and 409 are races it provokes on purpose). ` +
      `Events: the provider's feed by cursor, limit 50.`,
    '',
    '## Targets',
    '',
    ...targets.map(([passed, text]) => `- ${passed ? '✓' : '✗'} ${text}`),
    '',
    `**${ok ? 'All targets met.' : 'Targets failed.'}**`,
    '',
    '## Requests by status',
    '',
    `${fmt(totalRequests)} requests, ${fmt(totalRequests / loadSeconds)} req/s in all.`,
    '',
    `| instance | requests | req/s | ${statuses.map(label).join(' | ')} |`,
    `|---|---:|---:|${statuses.map(() => '---:').join('|')}|`,
    ...tallies.map((t, i) => `| ${i + 1} | ${fmt(t.requests)} | ${fmt(t.requests / loadSeconds)} | ${statuses.map((s) => fmt(statusOf(t, s))).join(' | ')} |`),
    '',
    `| request | ${statuses.map(label).join(' | ')} |`,
    `|---|${statuses.map(() => '---:').join('|')}|`,
    ...MIX.map(([op]) => `| ${op} | ${statuses.map((s) => fmt(tallies.reduce((n, t) => n + statusOf(t, s, op), 0))).join(' | ')} |`),
    '',
    ...(tallies.some((t) => t.errors.length > 0)
      ? ['Errors (first 20 per instance):', '', ...tallies.flatMap((t, i) => t.errors.map((e) => `- instance ${i + 1}: ${e}`)), '']
      : []),
    '## Events and deliveries',
    '',
    `${fmt(eventRows.length)} events committed; ${fmt([...receiver.endpoints.values()].reduce((n, e) => n + [...e.arrivals.values()].reduce((m, c) => m + c, 0), 0))} deliveries received ` +
      `(${fmt([...receiver.endpoints.values()].reduce((n, e) => n + e.arrivals.size, 0))} distinct webhook-ids), ${receiver.strays} at no endpoint's path. ` +
      `Attempts the service recorded: ${attempts.map((row) => `${row.outcome} ${fmt(Number(row.n))}`).join(', ') || 'none'}. ` +
      `Most deliveries owed at once (1 s samples): ${fmt(maxOwed)}; owed when the load stopped: ${fmt(owedAtEnd)}.`,
    '',
    '| type | events | received |',
    '|---|---:|---:|',
    ...typeNames.map((type) => `| ${type} | ${fmt(eventTypes.get(type) ?? 0)} | ${fmt(receivedTypes.get(type) ?? 0)} |`),
    '',
    ...(duplicated.length > 0
      ? [
          'Duplicates, with the attempts the service recorded for each:',
          '',
          ...duplicated.slice(0, 20).map(
            (d) =>
              `- endpoint ${d.endpoint}, ${d.id}: received ${d.times} times; recorded: ${
                duplicateAttempts
                  .filter((row) => row.event_id === d.id)
                  .map((row) => `${row.outcome} ${row.n}`)
                  .join(', ') || 'nothing'
              }`,
          ),
          '',
        ]
      : []),
    '## Expiries',
    '',
    `${fmt(allListings)} listings created, ${fmt(withdrawnListings)} withdrawn, ${fmt(expiredListings)} expiries recorded (${fmt(expiredDuringLoad)} of them due while the load ran). ` +
      `Due expiries not yet recorded when the load stopped: ${fmt(unrecordedAtEnd)}. ` +
      `From a listing's expiry to its listing.expired event: p50 ${fmt(percentile(lagsAll, 50) / 1000, 2)} s, p99 ${fmt(percentile(lagsAll, 99) / 1000, 2)} s, max ${fmt(Math.max(0, ...lagsAll) / 1000, 2)} s (the sweep runs every 2 s on each instance; the API allows 10 s). ` +
      `Drain (until every listing not withdrawn had expired and been recorded, and every event delivered; the last creates expire up to ${TTL_TIMED_S} s after the load): ${drained ? `${fmt(drainSeconds, 1)} s` : `not done after ${DRAIN_TIMEOUT_S} s`}.`,
    '',
  ]
  console.log(lines.join('\n'))
  console.log(`written to ${writeResult('fleet', lines.join('\n'))}`)
  failed = !ok
} finally {
  await cleanups.run()
}
process.exit(failed ? 1 : 0)
