/**
 * `npm run bench:reservations`: holds on a hot listing, and what reservations cost discovery (issue 36), on SQLite
 * and on PostgreSQL. Scenarios, measured in alternating rounds (the order turning each round), this build only:
 *
 *   hold-fresh   1-unit holds on one hot listing (one item, quantity 1,000,000) by --marketplaces marketplaces,
 *                a unique referenceId per request, --connections connections; a new hot listing every round, so
 *                each measurement starts with no hold open
 *   hold-open    the same on a hot listing filled beforehand with --open-holds open holds (more every round)
 *   create1      1-item creates of another provider, a unique referenceId per request: the write path the holds
 *                are judged against
 *   webhook-lag  the webhooks of holds (target: delivery lag p99 < 1 s at 500 holds/s, on both owners' endpoints).
 *                One endpoint of the hot listings' provider and one of each marketplace, events reservation.*, each
 *                to a receiver of its own in this process (webhook-receiver.ts: 127.0.0.1, port 0, 200 at once,
 *                signature checked); 1-unit holds on a fresh hot listing at --hold-rate a second, open loop
 *                (open-loop.ts), for --sustain seconds; then what is still owed awaited (at most --delivery-wait
 *                seconds). Per kind of owner: arrivals against the holds answered 201 and the reservations held,
 *                lag from the event's createdAt to arrival p50/p99/max; each reservation held must arrive exactly
 *                once at the provider's endpoint and once at its marketplace's (missing, duplicates, strays, wrong
 *                owner and bad signatures counted). The endpoints exist only during the scenario, after a warm-up at
 *                the rate on the warm-up listing whose deliveries are awaited and left out, so the other scenarios
 *                deliver nothing
 *   discover     5 km nearest-first pages of 20 around a city of --city-listings listings (city.ts), on two
 *                databases seeded alike: `none` holds nothing, `held` has 1 unit held on every --held-every-th
 *                listing (10; with 0 it holds nothing either: an A/A check of the two cities). On PostgreSQL the
 *                pages of the listings table and of discovery's two indexes are written down for each city, and
 *                --reindex rebuilds those indexes once the holds are made (what the holds' row updates did to
 *                their size taken out). Each city's measured service starts once the city is settled; the holds
 *                are made through a service of their own
 *
 * Holds are warmed up on a listing of their own, so that a measured listing's open holds are only its own. After the
 * rounds, the accounting is checked: each hot listing's `held` (GET …/stock) against its held reservations listed by
 * its provider, and the sum against the holds answered 201 (the service's own count in /metrics, and the load
 * tool's, which misses answers to requests still in flight when a run ended). The fill of --open-holds is sent once
 * each by a Node client that waits for every answer, so there `held` must equal its 201s exactly.
 *
 *   npm run bench:reservations
 *   npm run bench:reservations -- --duration 3 --rounds 1 --city-listings 20000 --open-holds 2000   (a quick look)
 *   npm run bench:reservations -- --scenarios webhook-lag --sustain 5 --rounds 1                   (webhooks only)
 *   npm run bench:reservations -- --scenarios discover --dialects postgres --rounds 5 --reindex
 */
import { loadavg } from 'node:os'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { openDatabase, type Database } from '../src/db/connection.js'
import { ReservationEventTypes } from '../src/events/types.js'
import { migrate } from '../src/db/migrate.js'
import { MarketplaceRepository } from '../src/providers/marketplaces.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { startImageServer, type ImageServer } from '../test/image-server.js'
import { seededRandom as random } from '../test/seeded-random.js'
import { DENSE_CITY, discoverKinds, fiveKmPage, inDisc, PAGE_SIZE } from './city.js'
import { describeBuild } from './builds.js'
import { DIALECT_TITLES, freshDatabase, postgresAnswers, settle, type Dialect } from './databases.js'
import { runEachOnce, type EachOnceResult } from './each-once.js'
import { cleanUpOnSignals, fmt, listingBody, machine, ROOT, startService, writeResult, type RunningService } from './lib.js'
import { loadTool, runLoad, UNIQUE, type CountedResult, type LoadResult, type RequestKind } from './load.js'
import { runOpenLoop } from './open-loop.js'
import { Rounds } from './rounds.js'
import { seed } from './seed.js'
import { addEndpoint, lagFigures, owed, RECEIVER_ENV, removeEndpoint, startReceiver, type Receiver } from './webhook-receiver.js'

const { values: args } = parseArgs({
  options: {
    dialects: { type: 'string', default: 'sqlite,postgres' },
    /** Seconds per measurement, after a warm-up. */
    duration: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    /** Marketplaces sending the holds, in turn. */
    marketplaces: { type: 'string', default: '5' },
    /** Open holds on the hot listing of `hold-open` before the first round. */
    'open-holds': { type: 'string', default: '20000' },
    /** Listings of the discovery city, each database. */
    'city-listings': { type: 'string', default: '100000' },
    /** Every Nth listing of the `held` city holds 1 unit; 0 holds none there (an A/A check of the two cities). */
    'held-every': { type: 'string', default: '10' },
    /**
     * PostgreSQL: rebuild the listings table's indexes of both cities after the holds, so that what the holds' row
     * updates did to the indexes' size is taken out of the comparison.
     */
    reindex: { type: 'boolean', default: false },
    /** webhook-lag: holds per second, open loop, and for how many seconds. */
    'hold-rate': { type: 'string', default: '500' },
    sustain: { type: 'string', default: '20' },
    /** webhook-lag: how long to wait, at most, for the deliveries still owed when the holds stop. */
    'delivery-wait': { type: 'string', default: '120' },
    /** A subset of the scenarios, comma-separated. */
    scenarios: { type: 'string' },
  },
})

const ALL_SCENARIOS = ['hold-fresh', 'hold-open', 'create1', 'webhook-lag', 'discover'] as const
type Scenario = (typeof ALL_SCENARIOS)[number]
const chosen = args.scenarios?.split(',') ?? ALL_SCENARIOS
for (const name of chosen) {
  if (!(ALL_SCENARIOS as readonly string[]).includes(name)) throw new Error(`unknown scenario ${name}: one of ${ALL_SCENARIOS.join(', ')}`)
}
const SCENARIOS = ALL_SCENARIOS.filter((scenario) => chosen.includes(scenario))
const HOLD_SCENARIOS = SCENARIOS.filter((scenario) => scenario !== 'discover')

const DURATION_S = Number(args.duration)
const ROUNDS = Number(args.rounds)
const CONNECTIONS = Number(args.connections)
const MARKETPLACES = Number(args.marketplaces)
const OPEN_HOLDS = Number(args['open-holds'])
const CITY_LISTINGS = Number(args['city-listings'])
const HOLD_RATE = Number(args['hold-rate'])
const SUSTAIN_S = Number(args.sustain)
const DELIVERY_WAIT_S = Number(args['delivery-wait'])
/** The target of webhook-lag: delivery lag p99 below this, on the provider's endpoint and on the marketplaces'. */
const LAG_TARGET_MS = 1000
const WARMUP_S = 2
const HOT_QUANTITY = 1_000_000
/** Long enough that no hold runs out during a run. */
const HOLD_SECONDS = 3600
/** Listings live a day, so nothing seeded or created expires during a run. */
const TTL_S = 86_400
const CITY_RADIUS_KM = 10
const CITY_PROVIDERS = 10
const HELD_EVERY = Number(args['held-every'])
const DISCOVER_SIDES = ['none', 'held'] as const
/** How long a hold sent once waits for its answer: every answer is awaited, even on a loaded machine. */
const ANSWER_WAIT_MS = 120_000

const mark = (ok: boolean) => (ok ? '✓' : '✗')

const cleanups = cleanUpOnSignals('stopping the services and dropping the databases')

/** A service's /api/v1 request, answered as JSON or thrown. */
async function call<T>(service: RunningService, method: string, path: string, token: string, body?: unknown): Promise<T> {
  const answer = await fetch(`${service.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await answer.text()
  if (!answer.ok) throw new Error(`${method} ${path} answered ${answer.status}: ${text.slice(0, 300)}`)
  return JSON.parse(text) as T
}

/** What a database is set up with before its service starts: its providers' and marketplaces' tokens, and their ids. */
interface Tokens {
  providers: string[]
  marketplaces: string[]
  providerIds: string[]
  marketplaceIds: string[]
}

async function makeClients(url: string, providers: string[], marketplaces: number): Promise<Tokens> {
  const database = openDatabase(url)
  try {
    await migrate(database)
    const tokens: Tokens = { providers: [], marketplaces: [], providerIds: [], marketplaceIds: [] }
    for (const name of providers) {
      const provider = await new ProviderRepository(database).create({ name, industry: 'bakery' }, Date.now())
      tokens.providers.push(provider.token.token)
      tokens.providerIds.push(provider.id)
    }
    for (let i = 0; i < marketplaces; i++) {
      const marketplace = await new MarketplaceRepository(database).create(`Bench marketplace ${i + 1}`, Date.now())
      tokens.marketplaces.push(marketplace.token)
      tokens.marketplaceIds.push(marketplace.id)
    }
    return tokens
  } finally {
    await database.close()
  }
}

async function serve(url: string, token: string): Promise<RunningService> {
  const service = await startService(
    { DATABASE_URL: url, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true', ...RECEIVER_ENV, LISTING_TTL_TIMED_SECONDS: String(TTL_S) },
    token,
  )
  cleanups.add(() => service.stop())
  return service
}

/** 1-unit holds of item 0 of a listing, each marketplace in turn, a unique referenceId per request. */
const holdKinds = (listingId: string, marketplaceTokens: string[]): RequestKind[] =>
  marketplaceTokens.map((token) => ({
    weight: 1,
    method: 'POST',
    path: '/api/v1/reservations',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: `{"listingId":"${listingId}","referenceId":"${UNIQUE}","items":[{"position":0,"quantity":1}],"holdSeconds":${HOLD_SECONDS}}`,
  }))

interface Stock {
  version: number
  items: Array<{ position: number; quantity: number; held: number; available: number }>
}

/** The hold database: its service, the hot listings by name, and the tokens. */
interface HoldBench {
  service: RunningService
  url: string
  tokens: Tokens
  /** The provider of the hot listings, and the one whose creates are measured. */
  bakery: string
  creates: string
  /** Every hot listing made, in order: the warm-up one, the open one, a fresh one per round. */
  hot: Array<{ name: string; id: string }>
  fill?: { result: EachOnceResult; held: number }
  /** Holds that webhook-lag's open loop sent and had no answer to (the request may have been done). */
  unanswered: number
}

async function hotListing(bench: HoldBench, name: string, images: ImageServer): Promise<string> {
  const body = listingBody(`hot-${name}`, images.url('/img/brand.png'), [undefined])
  const created = await call<{ listingId: string }>(bench.service, 'POST', '/api/v1/listing/create', bench.bakery, {
    ...body,
    items: body.items.map((item) => ({ ...item, quantity: HOT_QUANTITY })),
  })
  bench.hot.push({ name, id: created.listingId })
  return created.listingId
}

/** `19,997 × 201, 3 × 503`. */
const answersOf = (result: CountedResult) =>
  Object.entries(result.statuses)
    .map(([status, n]) => `${fmt(n)} × ${status}`)
    .join(', ')

const stockOf = (bench: HoldBench, listingId: string) => call<Stock>(bench.service, 'GET', `/api/v1/listing/${listingId}/stock`, bench.bakery)

async function prepareHolds(dialect: Dialect, images: ImageServer): Promise<HoldBench> {
  const fresh = await freshDatabase(dialect)
  cleanups.add(() => fresh.drop())
  const tokens = await makeClients(fresh.url, ['Bench bakery', 'Bench creates'], MARKETPLACES)
  const [bakery, creates] = tokens.providers as [string, string]
  const bench: HoldBench = { service: await serve(fresh.url, bakery), url: fresh.url, tokens, bakery, creates, hot: [], unanswered: 0 }
  await hotListing(bench, 'warm-up', images)
  if (SCENARIOS.includes('hold-open')) {
    // Every fill request is sent once and its answer awaited: here held must equal the 201s exactly.
    const open = await hotListing(bench, 'open', images)
    const kinds = holdKinds(open, tokens.marketplaces)
    const requests = Array.from({ length: OPEN_HOLDS }, (_, i) => {
      const kind = kinds[i % kinds.length] as RequestKind
      return { ...kind, body: kind.body?.replace(UNIQUE, `fill-${i}`) }
    })
    const result = await runEachOnce(bench.service.baseUrl, requests, CONNECTIONS, ANSWER_WAIT_MS)
    const held = (await stockOf(bench, open)).items[0]?.held ?? NaN
    bench.fill = { result, held }
    console.error(`${dialect}: ${fmt(OPEN_HOLDS)} holds sent once each, ${fmt(result.rps)}/s, answered ${answersOf(result)}; held ${fmt(held)}`)
  }
  // Tables filled through the API: PostgreSQL gets what autovacuum would have done by now (off on our server).
  const database = openDatabase(fresh.url)
  await settle(database).finally(() => database.close())
  return bench
}

/** The discovery city: the same listings on each database, seeded straight into the tables. */
const PLACES = (() => {
  const next = random(20261127)
  const nowUnix = Math.floor(Date.now() / 1000)
  return Array.from({ length: CITY_LISTINGS }, () => ({
    ...inDisc(next, DENSE_CITY, CITY_RADIUS_KM),
    expiresAtUnix: nowUnix + TTL_S,
    discountRate: Math.round(3 + next() * 6) / 10,
  }))
})()

interface CityBench {
  side: (typeof DISCOVER_SIDES)[number]
  service: RunningService
  marketplaceToken: string
  /** The holds made in the `held` city before its service was started. */
  hold?: EachOnceResult | undefined
  /** PostgreSQL: 8 kB pages of the listings table and of the two indexes discovery scans, once settled. */
  pages?: string
}

async function prepareCity(dialect: Dialect, side: CityBench['side']): Promise<CityBench> {
  const fresh = await freshDatabase(dialect)
  cleanups.add(() => fresh.drop())
  const database = openDatabase(fresh.url)
  let listings: Array<{ id: string }> = []
  let providerToken = ''
  try {
    const perProvider = Math.ceil(CITY_LISTINGS / CITY_PROVIDERS)
    for (let first = 0; first < CITY_LISTINGS; first += perProvider) {
      const count = Math.min(perProvider, CITY_LISTINGS - first)
      providerToken = (
        await seed(database, count, {
          items: 1,
          providerName: `City provider ${first / perProvider + 1}`,
          analyze: false,
          place: (seq) => PLACES[first + seq - 1] as (typeof PLACES)[number],
        })
      ).token
    }
    listings = await database.kysely.selectFrom('listings').select('id').orderBy('id').execute()
  } finally {
    await database.close()
  }
  const tokens = await makeClients(fresh.url, [], MARKETPLACES)
  const hold = side === 'held' && HELD_EVERY > 0 ? await holdEveryNth(fresh.url, providerToken, listings, tokens.marketplaces) : undefined
  const pages = await settleCity(fresh.url)
  // The measured service starts on the settled city in both cases, so that neither side carries what serving the
  // holds left in a process.
  const service = await serve(fresh.url, providerToken)
  const city: CityBench = { side, service, marketplaceToken: tokens.marketplaces[0] as string, hold, pages }
  await fiveKmPage(service.baseUrl, city.marketplaceToken) // a full page, or the run stops here
  console.error(
    `${dialect}: city "${side}" ready, ${fmt(listings.length)} listings, ${fmt(heldListings(city))} holding a reservation${city.pages ? `; pages: ${city.pages}` : ''}`,
  )
  return city
}

/** 1 unit of every HELD_EVERY-th listing held, the marketplaces in turn, through a service of their own, stopped after. */
async function holdEveryNth(url: string, providerToken: string, listings: ReadonlyArray<{ id: string }>, marketplaceTokens: string[]) {
  const holding = await serve(url, providerToken)
  const requests = listings
    .filter((_, i) => i % HELD_EVERY === 0)
    .map(({ id }, i) => {
      const kind = holdKinds(id, marketplaceTokens)[i % MARKETPLACES] as RequestKind
      return { ...kind, body: kind.body?.replace(UNIQUE, `city-${i}`) }
    })
  try {
    return await runEachOnce(holding.baseUrl, requests, CONNECTIONS, ANSWER_WAIT_MS)
  } finally {
    await holding.stop()
  }
}

/** A hold refused under load (a 503) holds nothing: the listings holding one are those answered 201. */
const heldListings = (city: CityBench) => city.hold?.statuses['201'] ?? 0

/** Settles the city's database; on PostgreSQL, returns the pages of its listings and discovery's indexes. */
async function settleCity(url: string): Promise<string | undefined> {
  const settling = openDatabase(url)
  try {
    await settle(settling)
    if (settling.dialect !== 'postgres') return undefined
    if (args.reindex) await sql`reindex table listings`.execute(settling.kysely)
    return await listingPages(settling)
  } finally {
    await settling.close()
  }
}

/**
 * A hold writes its listing's held columns, which discovery's covering indexes include: on PostgreSQL the row's new
 * version gets new index entries, and the indexes may grow even once vacuumed.
 */
async function listingPages(database: Database): Promise<string> {
  const { rows } = await sql<{ name: string; pages: string }>`
    select relname as name, pg_relation_size(oid) / 8192 as pages from pg_class
    where relname in ('listings', 'listings_near', 'listings_ending') order by relname`.execute(database.kysely)
  return rows.map((row) => `${row.name} ${fmt(Number(row.pages))}`).join(', ')
}

/** As many requests as the service answers, after a warm-up: of `warmUp` when given (holds), else of the same. */
async function measure(baseUrl: string, kinds: RequestKind[], warmUp: RequestKind[] = kinds): Promise<LoadResult> {
  await runLoad(baseUrl, warmUp, { connections: CONNECTIONS, durationS: WARMUP_S })
  return runLoad(baseUrl, kinds, { connections: CONNECTIONS, durationS: DURATION_S })
}

/** The accounting after the rounds: each hot listing's held, its held reservations listed, and the 201s. */
interface Accounting {
  lines: string[]
  ok: boolean
}

interface Reservation {
  id: string
  marketplace: { id: string }
  items: Array<{ quantity: number }>
}

/** The reservations held on a listing, as its provider lists them. */
async function heldReservations(bench: HoldBench, listingId: string): Promise<Reservation[]> {
  const reservations: Reservation[] = []
  let cursor: string | null = null
  do {
    const query: string = `/api/v1/reservations?status=held&listingId=${listingId}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
    const page: { data: Reservation[]; nextCursor: string | null } = await call(bench.service, 'GET', query, bench.bakery)
    reservations.push(...page.data)
    cursor = page.nextCursor
  } while (cursor !== null)
  return reservations
}

/** The units held on a listing by its held reservations listed. */
const heldListed = async (bench: HoldBench, listingId: string) =>
  (await heldReservations(bench, listingId)).reduce((sum, reservation) => sum + reservation.items.reduce((units, line) => units + line.quantity, 0), 0)

/** Answers of POST /api/v1/reservations by status, as the service counted them. */
async function holdAnswers(service: RunningService): Promise<Map<string, number>> {
  const text = await (await fetch(`${service.baseUrl}/metrics`)).text()
  const counts = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (!line.startsWith('listing_http_requests_total{') || !line.includes('method="POST"') || !line.includes('route="/api/v1/reservations"')) continue
    const status = /status="(\d+)"/.exec(line)?.[1]
    if (status) counts.set(status, (counts.get(status) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)))
  }
  return counts
}

async function account(bench: HoldBench, record: Rounds): Promise<Accounting> {
  const lines = [
    '| hot listing | quantity | held (stock) | held reservations listed | available | quantity − held = available |',
    '|---|---:|---:|---:|---:|---|',
  ]
  let ok = true
  let heldTotal = 0
  for (const { name, id } of bench.hot) {
    const item = (await stockOf(bench, id)).items[0] as Stock['items'][number]
    const listed = await heldListed(bench, id)
    // The counter kept on the listing row against the rows that hold it.
    const agrees = item.held === listed && item.quantity === HOT_QUANTITY && item.available === item.quantity - item.held
    ok &&= agrees
    heldTotal += item.held
    lines.push(`| ${name} | ${fmt(item.quantity)} | ${fmt(item.held)} | ${fmt(listed)} | ${fmt(item.available)} | ${mark(agrees)} |`)
  }
  const answers = await holdAnswers(bench.service)
  const created = answers.get('201') ?? 0
  const others = [...answers].filter(([status]) => status !== '201')
  const holdRuns = ['hold-fresh', 'hold-open'].flatMap((key) => record.of(key))
  const counted = [...holdRuns, ...record.of('webhook-lag')].reduce((sum, run) => sum + run.requests - run.failures, 0)
  // A hold in flight when the load tool ends a run (warm-ups included) is committed, but its connection is gone before
  // the 201 is finished, so no count has it: at most one per connection and run. webhook-lag's open loop awaits every
  // answer, but gives up on one after 5 s: the hold may have been made all the same.
  const cutOff = heldTotal - created
  const bound = CONNECTIONS * 2 * holdRuns.length + bench.unanswered
  const sumOk = others.length === 0 && cutOff >= 0 && cutOff <= bound
  ok &&= sumOk
  lines.push(
    '',
    `${mark(sumOk)} Held on every hot listing together: ${fmt(heldTotal)}. Holds answered 201 (the service's /metrics, fill and warm-ups included): ${fmt(created)}` +
      `${others.length > 0 ? `; other answers: ${others.map(([status, n]) => `${n} × ${status}`).join(', ')}` : '; no other answer'}. ` +
      `The ${fmt(cutOff)} held beyond them were in flight when the load tool ended a run and closed its connections: committed, their 201 never finished (at most ${fmt(bound)}: ${CONNECTIONS} connections × ${2 * holdRuns.length} runs${record.has('webhook-lag') ? `, and ${fmt(bench.unanswered)} holds of \`webhook-lag\` given up on without an answer` : ''}). ` +
      `The load tools counted ${fmt(counted)} 201s in the measured runs.`,
  )
  if (bench.fill) {
    const { result, held } = bench.fill
    const created = result.statuses['201'] ?? 0
    const fillOk = held === created && result.statuses['no answer'] === undefined
    ok &&= fillOk
    lines.push(
      `${mark(fillOk)} The fill, whose every answer is awaited, so held must equal its 201s exactly: ${fmt(OPEN_HOLDS)} holds, each sent once (${fmt(result.rps)}/s, p99 ${fmt(result.p99Ms, 1)} ms), answered ${answersOf(result)}: held right after it ${fmt(held)}.`,
    )
  }
  return { lines, ok }
}

/** webhook-lag's two kinds of owner: the listing's provider (one endpoint), the marketplaces (one endpoint each). */
const OWNER_KINDS = ['provider', 'marketplace'] as const
type OwnerKind = (typeof OWNER_KINDS)[number]

interface LagEndpoint {
  kind: OwnerKind
  /** The owner's token and id. */
  token: string
  ownerId: string
  id: string
  receiver: Receiver
}

/** One kind of owner's deliveries of a round's listing, against the reservations held on it. */
interface DeliveryCheck {
  endpoints: number
  /** Arrivals at its endpoints, every one. */
  arrivals: number
  /** Reservations held on the listing that arrived at least once. */
  delivered: number
  /** Arrivals beyond a reservation's first: its event again (the same webhook-id), or another event of it. */
  sameEventAgain: number
  otherEvent: number
  /** Reservations held on the listing that never arrived (ids). */
  missing: string[]
  /** Arrivals of a reservation not held on the listing, of another listing or of another type than reservation.held. */
  strays: number
  /** Arrivals at an endpoint of an owner other than the reservation's (its provider, its marketplace). */
  wrongOwner: number
  /** Arrivals without the Standard Webhooks headers, or whose signature does not verify with the endpoint's secret. */
  unsigned: number
  lagsMs: number[]
}

interface LagRound {
  load: CountedResult
  /** Reservations answered 201, and those of them not held on the listing afterwards. */
  answered: number
  answeredNotHeld: number
  /** Reservations held on the listing after the round. */
  held: number
  owedAtEnd: number
  drainS: number
  /** Nothing owed to the round's endpoints within --delivery-wait. */
  drained: boolean
  checks: Record<OwnerKind, DeliveryCheck>
}

function checkDeliveries(kind: OwnerKind, endpoints: LagEndpoint[], listingId: string, reservations: Reservation[]): DeliveryCheck {
  const held = new Map(reservations.map((reservation) => [reservation.id, reservation]))
  /** Each reservation's webhook-ids, in the order they arrived. */
  const arrived = new Map<string, string[]>()
  const check: DeliveryCheck = {
    endpoints: 0,
    arrivals: 0,
    delivered: 0,
    sameEventAgain: 0,
    otherEvent: 0,
    missing: [],
    strays: 0,
    wrongOwner: 0,
    unsigned: 0,
    lagsMs: [],
  }
  for (const endpoint of endpoints.filter((e) => e.kind === kind)) {
    check.endpoints++
    check.unsigned += endpoint.receiver.unsigned
    for (const arrival of endpoint.receiver.arrivals) {
      check.arrivals++
      check.lagsMs.push(arrival.lagMs)
      const reservation = held.get(arrival.subject)
      if (!reservation || arrival.listingId !== listingId || arrival.type !== 'reservation.held') {
        check.strays++
        continue
      }
      // The provider's endpoint gets its listings' reservations; a marketplace's, the reservations it made.
      const owner = kind === 'provider' ? arrival.providerId : arrival.marketplaceId
      if (owner !== endpoint.ownerId || arrival.marketplaceId !== reservation.marketplace.id) check.wrongOwner++
      const ids = arrived.get(arrival.subject) ?? []
      if (ids.includes(arrival.webhookId)) check.sameEventAgain++
      else if (ids.length > 0) check.otherEvent++
      arrived.set(arrival.subject, [...ids, arrival.webhookId])
    }
  }
  check.delivered = arrived.size
  check.missing = reservations.filter((reservation) => !arrived.has(reservation.id)).map((reservation) => reservation.id)
  return check
}

const exactlyOnce = (check: DeliveryCheck) =>
  check.missing.length === 0 && check.sameEventAgain + check.otherEvent + check.strays + check.wrongOwner + check.unsigned === 0

/**
 * A round of webhook-lag: one endpoint of the hot listings' provider and one of each marketplace (reservation.*),
 * each to a receiver of its own; a warm-up at the rate on the warm-up listing, its deliveries awaited and forgotten;
 * holds at the rate on a fresh hot listing; then every delivery owed awaited, at most --delivery-wait seconds. The
 * endpoints are deleted afterwards, so the other scenarios deliver nothing.
 */
async function webhookLag(bench: HoldBench, round: number, images: ImageServer): Promise<LagRound> {
  const { service, tokens } = bench
  const owners = [
    { kind: 'provider' as const, token: bench.bakery, ownerId: tokens.providerIds[0] as string },
    ...tokens.marketplaces.map((token, i) => ({ kind: 'marketplace' as const, token, ownerId: tokens.marketplaceIds[i] as string })),
  ]
  const receivers: Receiver[] = []
  const database = openDatabase(bench.url)
  try {
    const endpoints: LagEndpoint[] = []
    for (const owner of owners) {
      const receiver = await startReceiver()
      receivers.push(receiver)
      const { id, secret } = await addEndpoint(service.baseUrl, owner.token, receiver.url, ReservationEventTypes)
      receiver.secret = secret
      endpoints.push({ ...owner, id, receiver })
    }
    const ids = endpoints.map((endpoint) => endpoint.id)
    const holds = (listingId: string, durationS: number, onAnswer?: (status: number, body: string) => void) =>
      runOpenLoop(service.baseUrl, holdKinds(listingId, tokens.marketplaces), { connections: CONNECTIONS, durationS, rate: HOLD_RATE, onAnswer }).then(
        (result) => {
          bench.unanswered += result.statuses['no answer'] ?? 0
          return result
        },
      )
    /** Waits until nothing is owed to the endpoints, at most --delivery-wait seconds; whether nothing is. */
    const drain = async () => {
      const until = performance.now() + DELIVERY_WAIT_S * 1000
      while ((await owed(database, ids)) > 0) {
        if (performance.now() > until) return false
        await sleep(100)
      }
      return true
    }

    await holds(bench.hot[0]?.id as string, WARMUP_S)
    if (!(await drain())) throw new Error(`webhook-lag: the warm-up's deliveries still owed after ${DELIVERY_WAIT_S} s`)
    for (const { receiver } of endpoints) {
      receiver.arrivals.length = 0
      receiver.unsigned = 0
    }

    const listingId = await hotListing(bench, `webhook-lag ${round + 1}`, images)
    const answered = new Set<string>()
    const load = await holds(listingId, SUSTAIN_S, (status, body) => {
      if (status === 201) answered.add((JSON.parse(body) as { id: string }).id)
    })
    const owedAtEnd = await owed(database, ids)
    const started = performance.now()
    const drained = await drain()
    const drainS = (performance.now() - started) / 1000
    const reservations = await heldReservations(bench, listingId)
    const heldIds = new Set(reservations.map((reservation) => reservation.id))
    for (const endpoint of endpoints) await removeEndpoint(service.baseUrl, endpoint.token, endpoint.id)
    return {
      load,
      answered: answered.size,
      answeredNotHeld: [...answered].filter((id) => !heldIds.has(id)).length,
      held: reservations.length,
      owedAtEnd,
      drainS,
      drained,
      checks: {
        provider: checkDeliveries('provider', endpoints, listingId, reservations),
        marketplace: checkDeliveries('marketplace', endpoints, listingId, reservations),
      },
    }
  } finally {
    for (const receiver of receivers) await receiver.close()
    await database.close()
  }
}

/** webhook-lag's table: a row per round and kind of owner. */
function lagLines(rounds: LagRound[]): string[] {
  const lines = [
    `Each round: one endpoint of the hot listings' provider and one of each of the ${MARKETPLACES} marketplaces, events ${ReservationEventTypes.join(', ')}, each to a receiver of its own in the benchmark's process (node:http on 127.0.0.1, answering 200 at once, checking the Standard Webhooks headers and the signature with the endpoint's secret); ` +
      `a ${WARMUP_S} s warm-up at the rate on the warm-up listing, its deliveries awaited and left out; then 1-unit holds on a fresh hot listing at ${fmt(HOLD_RATE)}/s, open loop (bench/open-loop.ts), for ${SUSTAIN_S} s, the marketplaces in turn; then every delivery owed awaited (at most ${DELIVERY_WAIT_S} s), and the endpoints deleted. ` +
      `Lag: a delivery's arrival at its receiver minus its event's \`createdAt\`, every arrival counted. Each reservation held on the listing afterwards (its provider's list) must arrive exactly once at the provider's endpoint and once at its marketplace's.`,
    '',
    '| round | holds: sent, /s, answered | reservations held on the listing | owed when the holds stopped, drained in | owner | endpoints | arrivals | reservations delivered | again: same event / another event | missing | strays / wrong owner / unsigned | lag p50 / p99 / max | p99 < 1 s |',
    '|---:|---|---:|---|---|---:|---:|---:|---|---:|---|---|:---:|',
  ]
  rounds.forEach((run, i) => {
    for (const kind of OWNER_KINDS) {
      const check = run.checks[kind]
      const lag = lagFigures(check.lagsMs)
      const missing =
        check.missing.length === 0 ? '0' : `${fmt(check.missing.length)} (${check.missing.slice(0, 3).join(', ')}${check.missing.length > 3 ? ', …' : ''})`
      lines.push(
        `| ${i + 1} | ${fmt(run.load.requests)}, ${fmt(run.load.rps)}/s, ${answersOf(run.load)}${run.answeredNotHeld > 0 ? ` (${fmt(run.answeredNotHeld)} answered 201 not held)` : ''} | ${fmt(run.held)} | ${fmt(run.owedAtEnd)}, ${run.drained ? `${fmt(run.drainS, 1)} s` : `**still owed after ${DELIVERY_WAIT_S} s**`} | ${kind === 'provider' ? 'provider' : 'marketplaces'} | ${check.endpoints} | ${fmt(check.arrivals)} | ${fmt(check.delivered)} | ${check.sameEventAgain} / ${check.otherEvent} | ${missing} | ${check.strays} / ${check.wrongOwner} / ${check.unsigned} | ${fmt(lag.p50)} / ${fmt(lag.p99)} / ${fmt(lag.max)} ms | ${mark(lag.p99 < LAG_TARGET_MS)} |`,
      )
    }
  })
  return [...lines, '']
}

/** webhook-lag's targets: p99 on each kind of owner's endpoints (the worst round), and every delivery exactly once. */
function lagVerdicts(rounds: LagRound[]): string[] {
  if (rounds.length === 0) return []
  const slowest = Math.min(...rounds.map((run) => run.load.rps))
  const verdicts = OWNER_KINDS.map((kind) => {
    const worst = Math.max(...rounds.map((run) => lagFigures(run.checks[kind].lagsMs).p99))
    return `- ${mark(worst < LAG_TARGET_MS)} \`webhook-lag\` ${kind === 'provider' ? "the provider's endpoint" : "the marketplaces' endpoints"}: worst delivery lag p99 ${fmt(worst)} ms at ${fmt(HOLD_RATE)} holds/s asked, ${fmt(slowest)}/s sent in the slowest round (target < 1 s at 500 holds/s)`
  })
  const sum = (pick: (check: DeliveryCheck) => number) => rounds.reduce((n, run) => n + OWNER_KINDS.reduce((m, kind) => m + pick(run.checks[kind]), 0), 0)
  const ok = rounds.every((run) => run.drained && run.answeredNotHeld === 0 && OWNER_KINDS.every((kind) => exactlyOnce(run.checks[kind])))
  verdicts.push(
    `- ${mark(ok)} \`webhook-lag\`: every reservation held delivered exactly once to its provider's endpoint and once to its marketplace's (${fmt(sum((check) => check.missing.length))} missing, ` +
      `${fmt(sum((check) => check.sameEventAgain))} the same event again, ${fmt(sum((check) => check.otherEvent))} another event of a reservation, ${fmt(sum((check) => check.strays))} strays, ${fmt(sum((check) => check.wrongOwner))} to the wrong owner, ${fmt(sum((check) => check.unsigned))} unsigned; ` +
      `${rounds.every((run) => run.drained) ? 'nothing left owed' : 'deliveries still owed at the end of the wait'})`,
  )
  return verdicts
}

const TITLES: Record<Scenario, string> = {
  'hold-fresh': 'hold 1 unit, a fresh hot listing each round (no hold open at its start)',
  'hold-open': `hold 1 unit, the hot listing with ${fmt(OPEN_HOLDS)} open holds before round 1`,
  create1: '1-item create, another provider, unique referenceId',
  'webhook-lag': `hold 1 unit at ${fmt(HOLD_RATE)}/s open loop for ${SUSTAIN_S} s, a fresh hot listing each round, an endpoint of the provider and of each marketplace (deliveries below)`,
  discover: `discovery, 5 km nearest-first, limit ${PAGE_SIZE}, 16 points drawn per request`,
}

async function benchDialect(dialect: Dialect, images: ImageServer): Promise<string[] | undefined> {
  if (dialect === 'postgres' && !(await postgresAnswers())) return undefined
  const record = new Rounds()
  const openAtStart: number[] = []
  const lagRounds: LagRound[] = []
  const lines = [`## ${DIALECT_TITLES[dialect]}`, '']
  try {
    const holds = HOLD_SCENARIOS.length > 0 ? await prepareHolds(dialect, images) : undefined
    const cities: CityBench[] = []
    if (SCENARIOS.includes('discover')) for (const side of DISCOVER_SIDES) cities.push(await prepareCity(dialect, side))
    const warmUpId = holds?.hot[0]?.id as string
    const measured = [...HOLD_SCENARIOS, ...cities.map((city) => `discover ${city.side}`)]
    for (let round = 0; round < ROUNDS; round++) {
      const order = measured.map((_, i) => measured[(i + round) % measured.length] as string)
      for (const key of order) {
        let result: LoadResult
        if (key.startsWith('discover ')) {
          const city = cities.find((c) => key === `discover ${c.side}`) as CityBench
          result = await measure(city.service.baseUrl, discoverKinds(city.marketplaceToken, 5, 'distance'))
        } else {
          const bench = holds as HoldBench
          if (key === 'create1') {
            const body = JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), [undefined]))
            const kind: RequestKind = {
              weight: 1,
              method: 'POST',
              path: '/api/v1/listing/create',
              headers: { authorization: `Bearer ${bench.creates}`, 'content-type': 'application/json' },
              body,
            }
            result = await measure(bench.service.baseUrl, [kind])
          } else if (key === 'webhook-lag') {
            const run = await webhookLag(bench, round, images)
            lagRounds.push(run)
            result = run.load
            const lags = OWNER_KINDS.map(
              (kind) => `${kind} p99 ${fmt(lagFigures(run.checks[kind].lagsMs).p99)} ms (${fmt(run.checks[kind].arrivals)} arrivals)`,
            )
            console.error(
              `${dialect} round ${round + 1}: webhook-lag ${fmt(run.answered)} holds answered 201, ${fmt(run.held)} held; delivery lag ${lags.join(', ')}`,
            )
          } else {
            const listingId =
              key === 'hold-open' ? (bench.hot.find((hot) => hot.name === 'open')?.id as string) : await hotListing(bench, `fresh ${round + 1}`, images)
            if (key === 'hold-open') openAtStart.push((await stockOf(bench, listingId)).items[0]?.held ?? NaN)
            result = await measure(bench.service.baseUrl, holdKinds(listingId, bench.tokens.marketplaces), holdKinds(warmUpId, bench.tokens.marketplaces))
          }
        }
        record.add(key, result)
        console.error(`${dialect} round ${round + 1}: ${key} ${fmt(result.rps)} req/s, p99 ${fmt(result.p99Ms, 1)} ms, ${result.failures} failures`)
      }
    }

    const row = (title: string, key: string, note = '') =>
      `| ${title}${note} | ${record.list(key, (run) => fmt(run.rps))} | ${fmt(record.median(key))} | ${record.list(key, (run) => fmt(run.p99Ms, 1))} ms | ${record.failures(key)} |`
    lines.push('| scenario | req/s, each round | median | p99, each round | failures |', '|---|---|---:|---|---:|')
    for (const scenario of HOLD_SCENARIOS) {
      const note = scenario === 'hold-open' ? ` (open holds at each start: ${openAtStart.map((n) => fmt(n)).join(', ')})` : ''
      lines.push(
        row(
          `\`${scenario}\`: ${TITLES[scenario]}, ${scenario === 'webhook-lag' ? 'at most ' : ''}${CONNECTIONS} connections${scenario === 'create1' ? '' : `, ${MARKETPLACES} marketplaces`}`,
          scenario,
          note,
        ),
      )
    }
    for (const city of cities) {
      lines.push(row(`\`discover\` ${city.side}: ${TITLES.discover}, ${CONNECTIONS} connections`, `discover ${city.side}`))
    }
    lines.push('')
    if (cities.length > 0) {
      const held = cities.find((city) => city.side === 'held')
      lines.push(
        `Discovery databases: ${fmt(CITY_LISTINGS)} listings of ${CITY_PROVIDERS} providers within ${CITY_RADIUS_KM} km of (${DENSE_CITY.latitude}, ${DENSE_CITY.longitude}), 1 item of quantity 10 each, seeded straight into the tables (bench/seed.ts) identically; ` +
          (HELD_EVERY > 0
            ? `\`held\`: 1 unit of every ${HELD_EVERY}th listing held (${fmt(held ? heldListings(held) : 0)} holds through the API, ${fmt(held?.hold?.rps ?? NaN)}/s, answered ${held?.hold ? answersOf(held.hold) : '–'}; none runs out during the run); \`none\`: no hold.`
            : '`held` holds nothing either (`--held-every 0`): an A/A check of the two cities.') +
          (cities.some((city) => city.pages)
            ? ` Pages (8 kB) once settled${args.reindex ? ' and reindexed (`--reindex`)' : ''}: ${cities.map((city) => `\`${city.side}\` ${city.pages ?? '–'}`).join('; ')}.`
            : ''),
        '',
      )
    }

    const verdicts: string[] = []
    const median = (key: string) => record.median(key)
    if (record.has('hold-fresh') && record.has('create1')) {
      const ratio = median('hold-fresh') / median('create1')
      verdicts.push(`- ${mark(ratio >= 0.5)} holds/s ÷ 1-item creates/s = ${fmt(ratio, 2)} (target ≥ 0.5; stretch ≥ 1: ${mark(ratio >= 1)})`)
    }
    for (const key of ['hold-fresh', 'hold-open']) {
      if (!record.has(key)) continue
      const worst = Math.max(...record.of(key).map((run) => run.p99Ms))
      verdicts.push(`- ${mark(worst < 100)} \`${key}\` worst p99 ${fmt(worst, 1)} ms (target < 100 ms)`)
    }
    if (record.has('hold-open') && record.has('hold-fresh')) {
      const ratio = median('hold-open') / median('hold-fresh')
      verdicts.push(`- ${mark(Math.abs(ratio - 1) <= 0.1)} holds/s with open holds ÷ at the start = ${fmt(ratio, 3)} (target within 10%)`)
    }
    if (record.has('discover held') && record.has('discover none')) {
      const ratio = median('discover held') / median('discover none')
      const what = HELD_EVERY > 0 ? `${fmt(100 / HELD_EVERY)}% of listings holding a reservation` : 'no hold in either city (A/A)'
      verdicts.push(`- ${mark(ratio >= 0.9)} discovery with ${what} ÷ with none = ${fmt(ratio, 3)} (target ≥ 0.9)`)
    }
    verdicts.push(...lagVerdicts(lagRounds))
    for (const key of [...measured]) if (record.failures(key) > 0) verdicts.push(`- ✗ \`${key}\`: ${record.failures(key)} failures`)
    if (holds) {
      const accounting = await account(holds, record)
      verdicts.push(`- ${mark(accounting.ok)} exact accounting after the run (below)`)
      lines.push('Targets (medians of the rounds):', '', ...verdicts, '', '### Accounting after the run', '', ...accounting.lines, '')
      if (lagRounds.length > 0) lines.push('### Webhook deliveries of holds (`webhook-lag`)', '', ...lagLines(lagRounds))
    } else {
      lines.push('Targets (medians of the rounds):', '', ...verdicts, '')
    }
  } finally {
    await cleanups.run()
  }
  return lines
}

const startLoad = loadavg()
const sections: string[] = [
  `# Reservations: holds on a hot listing, and discovery with holds — ${new Date().toISOString()}`,
  '',
  `Machine: ${machine()}. Load average at start: ${startLoad.map((l) => l.toFixed(2)).join(', ')} (1, 5, 15 min).`,
  `Command: \`npm run bench:reservations -- ${process.argv.slice(2).join(' ')}\``,
  `Build: ${describeBuild({ label: 'this build', root: ROOT })}.`,
  '',
  `Load: ${loadTool}, ${CONNECTIONS} connections, ${DURATION_S} s per measurement after a ${WARMUP_S} s warm-up (holds warm up on a listing of their own); ${ROUNDS} rounds, each every scenario, the order turning each round. ` +
    `The service runs as \`npm start\` does (LOG_LEVEL=info, access log to a file, RATE_LIMIT_PER_MINUTE=0, WEBHOOK_ALLOW_PRIVATE_NETWORKS=true for the receivers of \`webhook-lag\`), listings living a day; holds are 1 unit of item 0 with holdSeconds ${HOLD_SECONDS}, by ${MARKETPLACES} marketplaces in turn, each request a new referenceId. ` +
    `The hot listings' database is filled through the API, then settled (PostgreSQL: VACUUM ANALYZE, as autovacuum would have by then) before the rounds.`,
  '',
]
const images = await startImageServer()
try {
  for (const dialect of args.dialects.split(',') as Dialect[]) {
    const lines = await benchDialect(dialect, images)
    if (!lines) continue
    sections.push(...lines)
    console.log(lines.join('\n'))
  }
} finally {
  await images.close()
}
console.log(`written to ${writeResult('reservations', sections.join('\n'))}`)
process.exit(0)
