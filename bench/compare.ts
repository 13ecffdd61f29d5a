/**
 * `npm run bench`: what a change costs, one command away (issue 34). A candidate build (B, this checkout unless
 * --candidate) against a named baseline build (A, --baseline), in one run, rounds alternating, on SQLite and on
 * PostgreSQL; each build seeds and serves databases of its own (builds.ts). Scenarios, each a --scenarios name:
 *
 *   discover     5 km nearest-first pages of 20 from 16 points near a dense city's centre, a point drawn per
 *                request, with a marketplace's token (city.ts); judged against a ceiling answering with B's page
 *   create-many  the discovery database's seeding, timed: --discover-listings creates of 2 items, each at its own
 *                place within 10 km of the centre, of 10 providers in turn, through the API, sent once each by a
 *                Node client (each-once.ts); one chunk per round, A and B alternating, before anything else runs
 *   create1-16   1-item creates of one provider at 16 connections, a unique referenceId per request
 *   create1-50   the same at 50 connections
 *   create100    100-item creates of that provider (items without images)
 *   patch        PATCHes of one listing without If-Match, each setting its item's quantity to another number
 *   page1, random, last   the house's pages (builds.ts), page 1 against a ceiling answering with B's page 1
 *
 * The discovery database holds only the seeded listings: its providers and marketplace come from the build's own
 * CLI, and its service runs with a day's TTL, so nothing expires during a run. The pages database is the house's:
 * each build's own seed.ts, one provider of --listings listings and a second that receives the creates and whose
 * one listing the PATCHes change. Each scenario runs --connections connections (50) unless its name says.
 *
 * With --pgbouncer, on PostgreSQL, a third side, P: B's build on B's databases through a PgBouncer in transaction
 * mode (test/pgbouncer-support.ts), measured in the same rounds (bench/pgbouncer.ts measures it with CPU per
 * request instead, and against a base build's named statements).
 *
 *   npm run bench -- --baseline /path/to/a/checkout        (candidate: this checkout)
 *   npm run bench -- --baseline /work/base-0492 --candidate /work/base-house --listings 5000 --discover-listings 3000 --duration 3 --rounds 1
 */
import { execFileSync } from 'node:child_process'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { startImageServer, type ImageServer } from '../test/image-server.js'
import { keepsPrepared, pgbouncerInstalled, pgbouncerVersion, startPgBouncer } from '../test/pgbouncer-support.js'
import { seededRandom as random } from '../test/seeded-random.js'
import {
  AB_OPTIONS,
  buildsOf,
  createRequest,
  describeBuild,
  loadBuild,
  pagesOptions,
  pagesRequests,
  pagesTitle,
  PAGES_NOTE,
  servePages,
  type Build,
  type ServedPages,
} from './builds.js'
import { abHead, abRow, Rounds, runRounds } from './rounds.js'
import { DENSE_CITY, discoverKinds, fiveKmPage, inDisc, PAGE_SIZE } from './city.js'
import { DIALECT_TITLES, freshDatabase, postgresAnswers, settle, type Dialect } from './databases.js'
import { runEachOnce } from './each-once.js'
import { cleanUpOnSignals, fmt, listingBody, machine, startCeiling, startService, writeResult, type RunningService } from './lib.js'
import { COUNTER, loadTool, runWarmedUp, UNIQUE, type LoadResult, type RequestKind } from './load.js'

const { values: args } = parseArgs({
  options: {
    ...AB_OPTIONS,
    'discover-listings': { type: 'string', default: '30000' },
    pgbouncer: { type: 'boolean', default: false },
  },
})
if (!args.baseline) {
  console.error(
    'usage: npm run bench -- --baseline <root: a checkout with node_modules and a built dist/> [--candidate <root>] [--dialects sqlite,postgres] [--scenarios …] ...',
  )
  process.exit(2)
}

const ALL_SCENARIOS = ['discover', 'create-many', 'create1-16', 'create1-50', 'create100', 'patch', 'page1', 'random', 'last'] as const
type Scenario = (typeof ALL_SCENARIOS)[number]
const chosen = args.scenarios?.split(',') ?? ALL_SCENARIOS
for (const name of chosen) {
  if (!(ALL_SCENARIOS as readonly string[]).includes(name)) throw new Error(`unknown scenario ${name}: one of ${ALL_SCENARIOS.join(', ')}`)
}
const SCENARIOS = ALL_SCENARIOS.filter((scenario) => chosen.includes(scenario))
const DISCOVERY_SCENARIOS: readonly Scenario[] = ['discover', 'create-many']
const wantsDiscovery = SCENARIOS.some((scenario) => DISCOVERY_SCENARIOS.includes(scenario))
const wantsPages = SCENARIOS.some((scenario) => !DISCOVERY_SCENARIOS.includes(scenario))

const DURATION_S = Number(args.duration)
const ROUNDS = Number(args.rounds)
const CONNECTIONS = Number(args.connections)
const CONNECTIONS_OF = (scenario: Scenario) => (scenario === 'create1-16' ? 16 : scenario === 'create1-50' ? 50 : CONNECTIONS)
const WARMUP_S = 2
const PAGES_OPTIONS = pagesOptions(Number(args.listings), args.pages)
const DISCOVER_LISTINGS = Number(args['discover-listings'])
const DISCOVER_PROVIDERS = 10
const DISCOVER_RADIUS_KM = 10
/** The discovery service's TTL: a day, so nothing seeded expires during a run. */
const DISCOVER_TTL_S = 86_400
if (args.pgbouncer && !pgbouncerInstalled()) throw new Error('--pgbouncer: no PgBouncer at /usr/sbin/pgbouncer (PGBOUNCER_BIN)')

const [BUILD_A, BUILD_B] = buildsOf(args.baseline, args.candidate)
// Both builds are checked before anything is seeded: a wrong root fails at once.
for (const build of [BUILD_A, BUILD_B]) await loadBuild(build.root)

/** Everything to undo, newest first: run at the end of a dialect, on failure, and on Ctrl-C. */
const cleanups = cleanUpOnSignals('stopping the services and dropping the databases')

/** A build's discovery database and the service on it. */
interface Discovery {
  url: string
  service: RunningService
  marketplaceToken: string
  providerTokens: string[]
}

/** What is measured: a build with its services; P is B's build through a PgBouncer. */
interface Side {
  label: 'A' | 'B' | 'P'
  build: Build
  pages?: ServedPages
  discovery?: Discovery
}

/** The build's service on a database; `discovery`: with the TTL that keeps the seeded listings active. */
async function serveOn(build: Build, url: string, token: string, discovery: boolean, poolerPrepares = false): Promise<RunningService> {
  const env = {
    DATABASE_URL: url,
    IMAGE_ALLOW_PRIVATE_NETWORKS: 'true',
    ...(discovery ? { LISTING_TTL_TIMED_SECONDS: String(DISCOVER_TTL_S) } : {}),
    ...(poolerPrepares ? { DATABASE_POOLER_PREPARES: 'true' } : {}),
  }
  const service = await startService(env, token, join(build.root, 'dist'))
  cleanups.add(() => service.stop())
  return service
}

/** A fresh database with 10 providers and a marketplace made by the build's own CLI, and the build serving it. */
async function prepareDiscovery(dialect: Dialect, build: Build): Promise<Discovery> {
  const fresh = await freshDatabase(dialect)
  cleanups.add(() => fresh.drop())
  const cli = (...words: string[]) =>
    JSON.parse(
      execFileSync(process.execPath, [join(build.root, 'dist/cli/main.js'), ...words], {
        env: { PATH: process.env.PATH, DATABASE_URL: fresh.url },
        encoding: 'utf8',
      }),
    ) as { token: string }
  const providerTokens = Array.from({ length: DISCOVER_PROVIDERS }, (_, i) => cli('provider', 'create', '--name', `Discover ${i + 1}`).token)
  const marketplaceToken = cli('marketplace', 'create', '--name', 'Bench marketplace').token
  const service = await serveOn(build, fresh.url, providerTokens[0] as string, true)
  return { url: fresh.url, service, marketplaceToken, providerTokens }
}

/** Where each seeded listing is: the same places for every build. */
const PLACES = (() => {
  const next = random(20261127)
  return Array.from({ length: DISCOVER_LISTINGS }, () => inDisc(next, DENSE_CITY, DISCOVER_RADIUS_KM))
})()

/** The creates of round `round`'s share of the seeding, the providers in turn. */
function seedingRequests(discovery: Discovery, round: number, images: ImageServer): RequestKind[] {
  const [from, to] = [round, round + 1].map((r) => Math.floor((r * DISCOVER_LISTINGS) / ROUNDS)) as [number, number]
  return PLACES.slice(from, to).map((location, i) => ({
    weight: 1,
    method: 'POST',
    path: '/api/v1/listing/create',
    headers: { authorization: `Bearer ${discovery.providerTokens[(from + i) % DISCOVER_PROVIDERS]}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...listingBody(`discover-${from + i}`, images.url('/img/brand.png'), [undefined, undefined]), location }),
  }))
}

const HUNDRED_ITEMS_WITHOUT_IMAGES = Array.from({ length: 100 }, () => undefined)

/** Where a scenario's requests go on a side, and what they are; undefined where the side does not run it. */
function requestsOf(scenario: Scenario, side: Side, images: ImageServer): { baseUrl: string; kinds: RequestKind[] } | undefined {
  if (scenario === 'discover') {
    return side.discovery && { baseUrl: side.discovery.service.baseUrl, kinds: discoverKinds(side.discovery.marketplaceToken, 5, 'distance') }
  }
  const pages = side.pages
  if (!pages || scenario === 'create-many') return undefined
  const on = (kinds: RequestKind[]) => ({ baseUrl: pages.service.baseUrl, kinds })
  switch (scenario) {
    case 'create1-16':
    case 'create1-50':
      return on(pagesRequests('create1', pages, images, PAGES_OPTIONS))
    case 'create100':
      return on([createRequest(pages, JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), HUNDRED_ITEMS_WITHOUT_IMAGES)))])
    case 'patch':
      return on([
        {
          weight: 1,
          method: 'PATCH',
          path: `/api/v1/listing/${pages.checkListingId}`,
          headers: { authorization: `Bearer ${pages.createsToken}`, 'content-type': 'application/json' },
          body: `{"items":[{"position":0,"quantity":${COUNTER}}]}`,
        },
      ])
    default:
      return on(pagesRequests(scenario, pages, images, PAGES_OPTIONS))
  }
}

const TITLES: Record<Scenario, string> = {
  discover: `discovery, 5 km nearest-first, limit ${PAGE_SIZE}, 16 points drawn per request`,
  'create-many': `creates of ${DISCOVER_PROVIDERS} providers, 2 items, each at its own place (the discovery seeding, each create once)`,
  'create1-16': 'create, 1 item, one provider, unique referenceId',
  'create1-50': 'create, 1 item, one provider, unique referenceId',
  create100: 'create, 100 items, one provider',
  patch: "PATCH of one listing (an item's quantity, another each time), no If-Match",
  page1: pagesTitle('page1', PAGES_OPTIONS),
  random: pagesTitle('random', PAGES_OPTIONS),
  last: pagesTitle('last', PAGES_OPTIONS),
}
const titleOf = (scenario: Scenario) => `\`${scenario}\`: ${TITLES[scenario]}, ${CONNECTIONS_OF(scenario)} connections`

const CEILING_KINDS: RequestKind[] = [{ weight: 1, method: 'GET', path: '/', headers: {} }]
const measure = (baseUrl: string, kinds: RequestKind[], scenario: Scenario): Promise<LoadResult> =>
  runWarmedUp(baseUrl, kinds, { connections: CONNECTIONS_OF(scenario), durationS: DURATION_S, warmupS: WARMUP_S })

/** Issue 34's targets: B against A; P against B is within 15% of direct. */
const TARGETS: Record<Scenario, string> = {
  discover: 'B ≥ 15% of the ceiling, worst p99 < 100 ms, ≥ 0.90× A',
  'create-many': '≥ 0.90× A',
  'create1-16': '≥ 0.90× A, p99 ≤ A’s + 10%',
  'create1-50': '≥ 0.90× A, p99 ≤ A’s + 10%',
  create100: 'no worse than A',
  patch: 'no worse than A',
  page1: 'no worse than A',
  random: 'no worse than A',
  last: 'no worse than A',
}

/** A target's outcome: a line for the dialect's section and a cell for the summary. */
interface Verdict {
  scenario: Scenario
  ok: boolean
  line: string
  cell: string
}

const mark = (ok: boolean) => (ok ? '✓' : '✗')
const worstP99 = (record: Rounds, key: string) => Math.max(...record.of(key).map((run) => run.p99Ms))
const shareOfCeiling = (record: Rounds, scenario: Scenario, label: string) => record.median(`${scenario} ${label}`) / record.median(`${scenario} ceiling`)

/** B ÷ A of each round, paired by round: how far the ratio of the medians could move. */
function perRound(record: Rounds, keyA: string, keyB: string): string {
  const a = record.of(keyA)
  const ratios = record.of(keyB).map((run, i) => run.rps / (a[i]?.rps ?? NaN))
  return ratios.length > 1 ? ` (rounds ${fmt(Math.min(...ratios), 2)}–${fmt(Math.max(...ratios), 2)})` : ''
}

/** Issue 34's targets, from the medians of the rounds; any failure fails its target. */
function verdicts(record: Rounds, base: 'A' | 'B', side: 'B' | 'P'): Verdict[] {
  const out: Verdict[] = []
  for (const scenario of SCENARIOS) {
    const [keyA, keyB] = [`${scenario} ${base}`, `${scenario} ${side}`]
    if (!record.has(keyA) || !record.has(keyB)) continue
    const ratio = record.median(keyB) / record.median(keyA)
    const failures = record.failures(keyA) + record.failures(keyB)
    const failed = failures > 0 ? `; ${failures} failures` : ''
    const ratioText = `${side} ÷ ${base} = ${fmt(ratio, 2)}${perRound(record, keyA, keyB)}`
    const wanted = side === 'P' ? 'within 15% of direct' : TARGETS[scenario]
    const verdict = (ok: boolean, detail = '', cellDetail = '') => {
      const pass = ok && failures === 0
      out.push({
        scenario,
        ok: pass,
        line: `- ${mark(pass)} \`${scenario}\`: ${ratioText}${detail}${failed} (target: ${wanted})`,
        cell: `${mark(pass)} ${fmt(ratio, 2)}×${cellDetail}${failures > 0 ? `, ${failures} failures` : ''}`,
      })
    }
    if (side === 'P') {
      verdict(ratio >= 0.85)
      continue
    }
    switch (scenario) {
      case 'discover': {
        const share = shareOfCeiling(record, scenario, 'B')
        const p99 = worstP99(record, keyB)
        const detail = `; B ${fmt(100 * share, 1)}% of the ceiling, worst p99 ${fmt(p99, 1)} ms; A ${fmt(100 * shareOfCeiling(record, scenario, 'A'), 1)}%, ${fmt(worstP99(record, keyA), 1)} ms`
        const cellDetail = ` (B ${fmt(100 * share, 1)}% of the ceiling, p99 ${fmt(p99)} ms)`
        verdict(share >= 0.15 && p99 < 100 && ratio >= 0.9, detail, cellDetail)
        break
      }
      case 'create-many':
        verdict(ratio >= 0.9)
        break
      case 'create1-16':
      case 'create1-50': {
        const [p99A, p99B] = [keyA, keyB].map((key) => record.median(key, (run) => run.p99Ms)) as [number, number]
        const detail = `; p99 (medians) A ${fmt(p99A, 1)} ms, B ${fmt(p99B, 1)} ms`
        verdict(ratio >= 0.9 && p99B <= 1.1 * p99A, detail, ` (p99 ${fmt(p99B / p99A, 2)}× A's)`)
        break
      }
      case 'page1': {
        const shares = `; of the ceiling: A ${fmt(100 * shareOfCeiling(record, scenario, 'A'), 1)}%, B ${fmt(100 * shareOfCeiling(record, scenario, 'B'), 1)}%`
        verdict(ratio >= 1, shares)
        break
      }
      default:
        verdict(ratio >= 1)
    }
  }
  return out
}

interface DialectResult {
  lines: string[]
  verdicts: Verdict[]
  /** P against B, when --pgbouncer ran on this dialect. */
  bouncer: Verdict[]
}

async function benchDialect(dialect: Dialect, images: ImageServer): Promise<DialectResult | undefined> {
  if (dialect === 'postgres' && !(await postgresAnswers())) return undefined
  const record = new Rounds()
  const sides: Side[] = [
    { label: 'A', build: BUILD_A },
    { label: 'B', build: BUILD_B },
  ]
  const [a, b] = sides as [Side, Side]
  let ceilingBytes: Partial<Record<'page1' | 'discover', Buffer>> = {}
  const ceilings = new Map<'page1' | 'discover', Awaited<ReturnType<typeof startCeiling>>>()
  try {
    // One build's seed at a time; once both are served, the one not measured is idle.
    if (wantsPages) for (const side of sides) side.pages = await servePages(dialect, side.build, images, cleanups, PAGES_OPTIONS)
    if (wantsDiscovery) {
      for (const side of sides) side.discovery = await prepareDiscovery(dialect, side.build)
      await runRounds(
        {
          name: dialect,
          rounds: ROUNDS,
          scenarios: ['create-many'],
          sides,
          measure: (_, side, round) => {
            const discovery = side.discovery as Discovery
            return runEachOnce(discovery.service.baseUrl, seedingRequests(discovery, round, images), CONNECTIONS_OF('create-many'))
          },
        },
        record,
      )
      for (const side of sides) {
        const database = (await loadBuild(side.build.root)).openDatabase((side.discovery as Discovery).url)
        await settle(database).finally(() => database.close())
      }
    }
    if (args.pgbouncer && dialect === 'postgres') {
      // After the databases, so that it is stopped before they are dropped.
      // One that keeps prepared statements (PGBOUNCER_BIN of 1.21 or later) is told so: DATABASE_POOLER_PREPARES.
      const bouncer = await startPgBouncer({ poolMode: 'transaction', poolSize: 20 })
      cleanups.add(() => bouncer.stop())
      const p: Side = { label: 'P', build: BUILD_B }
      if (b.pages) p.pages = { ...b.pages, service: await serveOn(BUILD_B, bouncer.via(b.pages.url), b.pages.pagesToken, false, bouncer.keepsPrepared) }
      if (b.discovery)
        p.discovery = {
          ...b.discovery,
          service: await serveOn(BUILD_B, bouncer.via(b.discovery.url), b.discovery.providerTokens[0] as string, true, bouncer.keepsPrepared),
        }
      sides.push(p)
    }
    // Every side's discovery answers a full page; B's is what the ceiling sends.
    const fiveKmPages = new Map<Side, Buffer>()
    for (const side of sides) if (side.discovery) fiveKmPages.set(side, await fiveKmPage(side.discovery.service.baseUrl, side.discovery.marketplaceToken))
    ceilingBytes = { page1: b.pages?.pageOneBytes, discover: fiveKmPages.get(b) }
    for (const scenario of ['page1', 'discover'] as const) {
      const bytes = ceilingBytes[scenario]
      if (!SCENARIOS.includes(scenario) || !bytes) continue
      const ceiling = await startCeiling(bytes)
      cleanups.add(() => ceiling.stop())
      ceilings.set(scenario, ceiling)
    }
    await runRounds(
      {
        name: dialect,
        rounds: ROUNDS,
        scenarios: SCENARIOS.filter((scenario) => scenario !== 'create-many'),
        sides,
        measure: (scenario, side) => {
          const requests = requestsOf(scenario as Scenario, side, images)
          return requests && measure(requests.baseUrl, requests.kinds, scenario as Scenario)
        },
        ceiling: (scenario) => {
          const ceiling = ceilings.get(scenario as 'page1' | 'discover')
          return ceiling && measure(ceiling.baseUrl, CEILING_KINDS, scenario as Scenario)
        },
      },
      record,
    )
  } finally {
    await cleanups.run()
  }

  const lines = [`## ${DIALECT_TITLES[dialect]}`, '']
  if (a.pages && b.pages) {
    lines.push(
      `Pages database: ${fmt(PAGES_OPTIONS.listings)} listings of one provider, seeded by each build's own bench/seed.ts: A in ${a.pages.seedSeconds.toFixed(1)} s, B in ${b.pages.seedSeconds.toFixed(1)} s; page 1 is ${fmt(a.pages.pageOneBytes.length)} B from A, ${fmt(b.pages.pageOneBytes.length)} B from B.`,
    )
  }
  if (a.discovery) {
    lines.push(
      `Discovery database: ${fmt(DISCOVER_LISTINGS)} listings of ${DISCOVER_PROVIDERS} providers within ${DISCOVER_RADIUS_KM} km of (${DENSE_CITY.latitude}, ${DENSE_CITY.longitude}), created through each build's API (\`create-many\`).`,
    )
  }
  lines.push('', ...abHead('A', 'B'), ...SCENARIOS.map((scenario) => abRow(record, titleOf(scenario), `${scenario} A`, `${scenario} B`)), '')
  for (const scenario of ceilings.keys()) {
    const key = `${scenario} ceiling`
    lines.push(
      `Ceiling of \`${scenario}\` (node:http answering with B's ${scenario === 'page1' ? 'page 1' : '5 km page'}, ${fmt(ceilingBytes[scenario]?.length ?? 0)} B): ` +
        `${record.list(key, (run) => fmt(run.rps))} req/s (median ${fmt(record.median(key))}), p99 ${record.list(key, (run) => fmt(run.p99Ms, 1))} ms, ${record.failures(key)} failures.`,
      '',
    )
  }
  const found = verdicts(record, 'A', 'B')
  lines.push('Targets (medians of the rounds; any failure fails its target):', '', ...found.map((verdict) => verdict.line), '')
  const bouncer = verdicts(record, 'B', 'P')
  if (bouncer.length > 0) {
    lines.push(
      `### Through PgBouncer (transaction mode): P is B's build on B's databases through it (${pgbouncerVersion()}, ${keepsPrepared() ? 'max_prepared_statements = 200 and DATABASE_POOLER_PREPARES=true' : 'every statement unnamed'})`,
      '',
      ...abHead('B', 'P'),
      ...SCENARIOS.filter((scenario) => record.has(`${scenario} P`)).map((scenario) => abRow(record, titleOf(scenario), `${scenario} B`, `${scenario} P`)),
      '',
      ...bouncer.map((verdict) => verdict.line),
      '',
    )
  }
  return { lines, verdicts: found, bouncer }
}

/** One row a scenario, one column a dialect: the ratio and its target's mark. */
function summary(results: Array<{ dialect: Dialect; result: DialectResult }>): string[] {
  const bouncer = results.filter(({ result }) => result.bouncer.length > 0)
  const cell = (verdicts: Verdict[], scenario: Scenario) => verdicts.find((verdict) => verdict.scenario === scenario)?.cell ?? '–'
  return [
    '## Summary: B ÷ A, medians of the rounds',
    '',
    `| scenario | target | ${results.map(({ dialect }) => DIALECT_TITLES[dialect]).join(' | ')} |${bouncer.map(({ dialect }) => ` ${DIALECT_TITLES[dialect]} through PgBouncer (P ÷ B, target ≥ 0.85) |`).join('')}`,
    `|---|---|${results.map(() => '---|').join('')}${bouncer.map(() => '---|').join('')}`,
    ...SCENARIOS.map(
      (scenario) =>
        `| \`${scenario}\` | ${TARGETS[scenario]} | ${results.map(({ result }) => cell(result.verdicts, scenario)).join(' | ')} |${bouncer.map(({ result }) => ` ${cell(result.bouncer, scenario)} |`).join('')}`,
    ),
    '',
  ]
}

const startLoad = loadavg()
const sections: string[] = [
  `# A change against a baseline: A and B alternating — ${new Date().toISOString()}`,
  '',
  `Machine: ${machine()}. Load average at start: ${startLoad.map((l) => l.toFixed(2)).join(', ')} (1, 5, 15 min).`,
  `Command: \`npm run bench -- ${process.argv.slice(2).join(' ')}\``,
  '',
  `A (baseline): ${describeBuild(BUILD_A)}. B (candidate): ${describeBuild(BUILD_B)}. Each build seeds its own databases and serves them with its own dist/cli/main.js (LOG_LEVEL=info, access log to a file).`,
  '',
  `Load: ${loadTool}, each scenario at its connections, ${DURATION_S} s per measurement after a ${WARMUP_S} s warm-up; ${ROUNDS} rounds, each every scenario on every side, the order of the sides turning each round; a ceiling right before the scenario judged against it. ` +
    `\`create-many\` is the discovery database's seeding (${fmt(DISCOVER_LISTINGS)} creates, each sent once by a Node client at ${CONNECTIONS_OF('create-many')} connections, the rounds' shares alternating), done before the other scenarios. ` +
    `The random page draws page 1–${fmt(PAGES_OPTIONS.pages)} at limit ${PAGES_OPTIONS.limit} for every request (wrk: each thread seeded apart). Creates and PATCHes go to a second provider of the pages database, so the pages measured stay as seeded. ` +
    PAGES_NOTE,
  '',
]
const results: Array<{ dialect: Dialect; result: DialectResult }> = []
const images = await startImageServer()
try {
  for (const dialect of args.dialects.split(',') as Dialect[]) {
    const result = await benchDialect(dialect, images)
    if (!result) continue
    results.push({ dialect, result })
    sections.push(...result.lines)
    console.log(result.lines.join('\n'))
  }
} finally {
  await images.close()
}
const table = summary(results)
sections.push(...table)
console.log(table.join('\n'))
console.log(`written to ${writeResult('compare', sections.join('\n'))}`)
process.exit(0)
