/**
 * The house floors (issue 26): the rebuilt code ("candidate", B) against the code before it ("baseline", A), in
 * one run, rounds alternating, on SQLite and on PostgreSQL. A build is a root directory: a checkout with its own
 * bench/seed.ts, src/, a built dist/ and node_modules. The builds may differ in schema, so each seeds its own
 * database with its own code (its seed.ts and src/db/connection.ts, imported here under tsx) and serves it with
 * its own dist/cli/main.js.
 *
 * For each dialect: two fresh databases (PostgreSQL: the tests' createTestDatabase, dropped at the end, on failure
 * too), each seeded by its build with one provider of N listings (3 items each) and a second, near-empty provider
 * that receives the creates, so the pages measured stay the seeded ones throughout. Both services run; the one
 * not measured is idle. Each round runs every scenario on A then B (B then A the next round, to cancel drift),
 * the ceiling right before page 1, each measurement after a 2 s warm-up:
 *
 *   random  GET /api/v1/listing?page=P&limit=10, P drawn uniformly from 1..--pages per request: every page of
 *           the seeded provider by default, so that, as the issue puts it, no two requests are alike
 *   page1   GET /api/v1/listing?page=1&limit=10, the same URL from every connection
 *   last    GET /api/v1/listing?page=N/10&limit=10
 *   create1 POST /api/v1/listing/create, 1 item, a unique referenceId per request (load.ts's UNIQUE)
 *   ceiling bench/ceiling-server.mjs answering with the bytes of B's page 1
 *
 * What the pages met in the code before the house: SQLite kept up to 1,000 pages until anything committed
 * (SqliteReadCache), so at --pages 100 the random page was answered from that cache once warm; past 1,000 pages
 * it reaches the query. PostgreSQL answers identical pages in flight with one read
 * (the repository's TrailingBatches), so page 1 and the last page, one URL each, mostly share reads, and the
 * random page mostly does not.
 *
 *   npm run bench:house -- --baseline /path/to/before                 (candidate: this checkout)
 *   npm run bench:house -- --baseline /work/base --candidate /work/wt --listings 20000 --duration 4 --rounds 2
 */
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import type { Database, openDatabase as OpenDatabase } from '../src/db/connection.js'
import { createTestDatabase } from '../test/helper.js'
import { startImageServer, type ImageServer } from '../test/image-server.js'
import { loadTool, runLoad, UNIQUE, type LoadResult, type RequestKind } from './load.js'
import { cleanUpOnSignals, listingBody, machine, ROOT, startService, writeResult, type RunningService } from './lib.js'
import type { seed as Seed } from './seed.js'

const { values: args } = parseArgs({
  options: {
    baseline: { type: 'string' },
    candidate: { type: 'string', default: ROOT },
    dialects: { type: 'string', default: 'sqlite,postgres' },
    listings: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    scenarios: { type: 'string' },
    /** The random page is drawn from 1..pages (default: the last page, so every page may be drawn). */
    pages: { type: 'string' },
  },
})
if (!args.baseline) {
  console.error('usage: npm run bench:house -- --baseline <root of the build before> [--candidate <root>] [--dialects sqlite,postgres] ...')
  process.exit(2)
}

const ALL_SCENARIOS = ['random', 'page1', 'last', 'create1'] as const
type Scenario = (typeof ALL_SCENARIOS)[number]
const SCENARIOS = (args.scenarios?.split(',') ?? ALL_SCENARIOS) as Scenario[]
for (const scenario of SCENARIOS) {
  if (!ALL_SCENARIOS.includes(scenario)) throw new Error(`unknown scenario ${scenario}: one of ${ALL_SCENARIOS.join(', ')}`)
}
const LISTINGS = Number(args.listings)
const DURATION_S = Number(args.duration)
const ROUNDS = Number(args.rounds)
const CONNECTIONS = Number(args.connections)
const LIMIT = 10
const WARMUP_S = 2
const LAST_PAGE = Math.ceil(LISTINGS / LIMIT)
const PAGES = args.pages === undefined ? LAST_PAGE : Number(args.pages)
if (PAGES > LAST_PAGE) throw new Error(`--pages ${PAGES} is past the last page (${LAST_PAGE})`)

type Dialect = 'sqlite' | 'postgres'

interface Build {
  label: 'A' | 'B'
  root: string
}
const BUILDS: Build[] = [
  { label: 'A', root: resolve(args.baseline) },
  { label: 'B', root: resolve(args.candidate) },
]

/** A build's own seed and openDatabase. The call stays what today's seed(database, count, options) takes. */
interface BuildCode {
  seed: typeof Seed
  openDatabase: typeof OpenDatabase
}

async function loadBuild(root: string): Promise<BuildCode> {
  for (const path of ['bench/seed.ts', 'src/db/connection.ts', 'dist/cli/main.js']) {
    if (!existsSync(join(root, path))) throw new Error(`${root} has no ${path}: a build is a checkout with node_modules and a built dist/`)
  }
  const seedModule = await import(pathToFileURL(join(root, 'bench/seed.ts')).href)
  const connectionModule = await import(pathToFileURL(join(root, 'src/db/connection.ts')).href)
  return { seed: seedModule.seed, openDatabase: connectionModule.openDatabase }
}

/** Everything to undo, newest first: run at the end of a dialect, on failure, and on Ctrl-C. */
const cleanups = cleanUpOnSignals('stopping the services and dropping the databases')

async function freshDatabase(dialect: Dialect): Promise<{ url: string; drop(): Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'listing-house-'))
    return { url: `sqlite:${join(dir, 'bench.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  return createTestDatabase('postgres')
}

/**
 * After a bulk seed the writes are still going out (bench/discovery.ts's settle): checkpoint and sync before
 * measuring. PostgreSQL also gets what autovacuum would have done by then (it is off on our development server).
 */
async function settle(database: Database): Promise<void> {
  if (database.dialect === 'postgres') {
    await sql`vacuum analyze`.execute(database.kysely)
    await sql`checkpoint`.execute(database.kysely)
  } else {
    await sql`pragma wal_checkpoint(truncate)`.execute(database.kysely)
  }
  execFileSync('sync')
}

interface Served {
  build: Build
  service: RunningService
  /** The seeded provider's token: its pages are measured. */
  pagesToken: string
  /** A second provider's token: the creates go there, leaving the measured pages as seeded. */
  createsToken: string
  seedSeconds: number
  pageOneBytes: Buffer
}

async function serve(dialect: Dialect, build: Build, images: ImageServer): Promise<Served> {
  const code = await loadBuild(build.root)
  const fresh = await freshDatabase(dialect)
  cleanups.add(() => fresh.drop())
  const started = performance.now()
  const database = code.openDatabase(fresh.url)
  let pagesToken: string
  let createsToken: string
  try {
    createsToken = (await code.seed(database, 1, { providerName: 'Bench creates', analyze: false })).token
    pagesToken = (
      await code.seed(database, LISTINGS, {
        onProgress: (done) => {
          if (done % 100_000 === 0) console.error(`  ${dialect} ${build.label}: seeded ${done}`)
        },
      })
    ).token
    await settle(database)
  } finally {
    await database.close()
  }
  const seedSeconds = (performance.now() - started) / 1000
  console.error(`${dialect} ${build.label} (${build.root}): seeded ${LISTINGS} listings in ${seedSeconds.toFixed(1)} s`)
  const service = await startService({ DATABASE_URL: fresh.url, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true' }, pagesToken, join(build.root, 'dist'))
  cleanups.add(() => service.stop())

  // What is measured must answer as expected: full pages at both ends, and a create accepted.
  const page = async (n: number) => {
    const answer = await fetch(`${service.baseUrl}/api/v1/listing?page=${n}&limit=${LIMIT}`, { headers: { authorization: `Bearer ${pagesToken}` } })
    const bytes = Buffer.from(await answer.arrayBuffer())
    const body = answer.status === 200 ? JSON.parse(bytes.toString('utf8')) : undefined
    if (body?.content?.length !== LIMIT || body.recordCount !== LISTINGS) {
      throw new Error(`${build.label}: page ${n} answered ${answer.status}, not ${LIMIT} of ${LISTINGS} listings: ${bytes.subarray(0, 300).toString()}`)
    }
    return bytes
  }
  const pageOneBytes = await page(1)
  await page(LAST_PAGE)
  await page(PAGES)
  const created = await fetch(`${service.baseUrl}/api/v1/listing/create`, {
    method: 'POST',
    headers: { authorization: `Bearer ${createsToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(listingBody(`check-${build.label}`, images.url('/img/brand.png'), [undefined])),
  })
  if (!created.ok) throw new Error(`${build.label}: a create answered ${created.status}: ${await created.text()}`)
  return { build, service, pagesToken, createsToken, seedSeconds, pageOneBytes }
}

async function startCeiling(bytes: Buffer): Promise<{ baseUrl: string; stop(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'listing-ceiling-'))
  writeFileSync(join(dir, 'page.json'), bytes)
  const child = spawn(process.execPath, [join(ROOT, 'bench/ceiling-server.mjs'), join(dir, 'page.json')], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<string>((done) => child.stdout.setEncoding('utf8').once('data', (d: string) => done(d.trim())))
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    stop: () => {
      child.kill('SIGTERM')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function measure(baseUrl: string, kinds: RequestKind[]): Promise<LoadResult> {
  await runLoad(baseUrl, kinds, { connections: CONNECTIONS, durationS: WARMUP_S })
  return runLoad(baseUrl, kinds, { connections: CONNECTIONS, durationS: DURATION_S })
}

function requestsOf(scenario: Scenario, served: Served, images: ImageServer): RequestKind[] {
  const get = (page: number): RequestKind => ({
    weight: 1,
    method: 'GET',
    path: `/api/v1/listing?page=${page}&limit=${LIMIT}`,
    headers: { authorization: `Bearer ${served.pagesToken}` },
  })
  switch (scenario) {
    case 'random':
      // One kind per page, equal weights: load.ts draws one at random for every request (wrk: per thread seeded).
      return Array.from({ length: PAGES }, (_, i) => get(i + 1))
    case 'page1':
      return [get(1)]
    case 'last':
      return [get(LAST_PAGE)]
    case 'create1':
      return [
        {
          weight: 1,
          method: 'POST',
          path: '/api/v1/listing/create',
          headers: { authorization: `Bearer ${served.createsToken}`, 'content-type': 'application/json' },
          body: JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), [undefined])),
        },
      ]
  }
}

const SCENARIO_NAMES: Record<Scenario, string> = {
  random: `random page (1–${PAGES}, limit ${LIMIT}, drawn per request)`,
  page1: `page 1, limit ${LIMIT}, same URL from every connection`,
  last: `last page (${LAST_PAGE}), limit ${LIMIT}`,
  create1: 'create, 1 item, unique referenceId',
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const medianOf = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length / 2
  return sorted.length % 2 === 1 ? (sorted[Math.floor(mid)] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

async function benchDialect(dialect: Dialect, images: ImageServer): Promise<string[] | undefined> {
  const title = dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'
  if (dialect === 'postgres') {
    const probe = await createTestDatabase('postgres').catch((error: unknown) => {
      console.warn(`PostgreSQL does not answer (${error instanceof Error ? error.message : String(error)}): its half is skipped`)
    })
    if (!probe) return undefined
    await probe.drop()
  }
  const runs = new Map<string, LoadResult[]>() // `${scenario} ${label}`, and 'ceiling'
  const add = (key: string, result: LoadResult) => runs.set(key, [...(runs.get(key) ?? []), result])
  const served: Served[] = []
  try {
    // One build's seed at a time; once both are served, the one not measured is idle.
    for (const build of BUILDS) served.push(await serve(dialect, build, images))
    const [a, b] = served as [Served, Served]
    const ceiling = SCENARIOS.includes('page1') ? await startCeiling(b.pageOneBytes) : undefined
    if (ceiling) cleanups.add(() => ceiling.stop())
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? [a, b] : [b, a]
      for (const scenario of SCENARIOS) {
        // Right before page 1, which is judged against it: the two minutes apart moved by ±20% (discovery.ts).
        if (scenario === 'page1' && ceiling) {
          const result = await measure(ceiling.baseUrl, [{ weight: 1, method: 'GET', path: '/', headers: {} }])
          add('ceiling', result)
          console.error(`${dialect} round ${round + 1}: ceiling ${fmt(result.rps)} req/s`)
        }
        for (const one of order) {
          const result = await measure(one.service.baseUrl, requestsOf(scenario, one, images))
          add(`${scenario} ${one.build.label}`, result)
          console.error(
            `${dialect} round ${round + 1}: ${scenario} ${one.build.label} ${fmt(result.rps)} req/s, p99 ${fmt(result.p99Ms, 1)} ms, ${result.failures} failures`,
          )
        }
      }
    }
  } finally {
    await cleanups.run()
  }

  const [a, b] = served as [Served, Served]
  const of = (key: string) => runs.get(key) ?? []
  const rpsMedian = (key: string) => medianOf(of(key).map((run) => run.rps))
  const list = (key: string, pick: (run: LoadResult) => string) => of(key).map(pick).join(', ')
  const failures = (key: string) => of(key).reduce((sum, run) => sum + run.failures, 0)
  const lines = [
    `## ${title} — ${fmt(LISTINGS)} listings of one provider`,
    '',
    `Seeded by each build's own bench/seed.ts: A in ${a.seedSeconds.toFixed(1)} s, B in ${b.seedSeconds.toFixed(1)} s. ` +
      `Page 1 is ${fmt(a.pageOneBytes.length)} B from A, ${fmt(b.pageOneBytes.length)} B from B.`,
    '',
    '| scenario | A req/s, each round | B req/s, each round | B ÷ A (medians) | A p99, each round | B p99, each round | failures A / B |',
    '|---|---|---|---:|---|---|---:|',
    ...SCENARIOS.map((scenario) => {
      const [keyA, keyB] = [`${scenario} A`, `${scenario} B`]
      const rps = (key: string) => `${list(key, (run) => fmt(run.rps))} (median ${fmt(rpsMedian(key))})`
      const p99 = (key: string) => `${list(key, (run) => fmt(run.p99Ms, 1))} ms`
      return `| ${SCENARIO_NAMES[scenario]} | ${rps(keyA)} | ${rps(keyB)} | ${fmt(rpsMedian(keyB) / rpsMedian(keyA), 3)} | ${p99(keyA)} | ${p99(keyB)} | ${failures(keyA)} / ${failures(keyB)} |`
    }),
    '',
  ]
  if (runs.has('ceiling')) {
    lines.push(
      `Ceiling (node:http answering with B's page 1, ${fmt(b.pageOneBytes.length)} B): ${list('ceiling', (run) => fmt(run.rps))} req/s (median ${fmt(rpsMedian('ceiling'))}), ` +
        `p99 ${list('ceiling', (run) => fmt(run.p99Ms, 1))} ms, ${failures('ceiling')} failures.`,
      '',
    )
  }
  const want = (scenario: Scenario) => SCENARIOS.includes(scenario)
  const mark = (ok: boolean) => (ok ? '✓' : '✗')
  const floors: string[] = []
  const anyFailures = (scenario: Scenario) => failures(`${scenario} A`) + failures(`${scenario} B`) > 0
  const failed = (scenario: Scenario) => (anyFailures(scenario) ? ' (failures: see the table)' : '')
  if (want('random')) {
    const ratio = rpsMedian('random B') / rpsMedian('random A')
    floors.push(`- ${mark(ratio >= 0.9 && !anyFailures('random'))} random page: B ÷ A = ${fmt(ratio, 3)} (floor 0.90)${failed('random')}`)
  }
  if (want('page1')) {
    const share = rpsMedian('page1 B') / rpsMedian('ceiling')
    floors.push(`- ${mark(share >= 0.25 && failures('page1 B') === 0)} page 1: B = ${fmt(100 * share, 1)}% of the ceiling (floor 25%)${failed('page1')}`)
  }
  if (want('page1') && want('last')) {
    const gap = Math.abs(rpsMedian('last B') - rpsMedian('page1 B')) / rpsMedian('page1 B')
    floors.push(
      `- ${mark(gap <= 0.1 && failures('last B') === 0)} last page: B's |last − page 1| ÷ page 1 = ${fmt(100 * gap, 1)}% (ceiling 10%)${failed('last')}`,
    )
  }
  if (want('create1')) {
    const ratio = rpsMedian('create1 B') / rpsMedian('create1 A')
    floors.push(`- ${mark(ratio >= 0.8 && !anyFailures('create1'))} 1-item creates: B ÷ A = ${fmt(ratio, 3)} (floor 0.80)${failed('create1')}`)
  }
  lines.push('Floors (medians of the rounds; any failure fails its floor):', '', ...floors, '')
  return lines
}

const startLoad = loadavg()
const command = `npm run bench:house -- ${process.argv.slice(2).join(' ')}`
const sections: string[] = [
  `# House floors: before (A) and after (B), alternating — ${new Date().toISOString()}`,
  '',
  `Machine: ${machine()}. Load average at start: ${startLoad.map((l) => l.toFixed(2)).join(', ')} (1, 5, 15 min).`,
  `Command: \`${command}\``,
  '',
  `A (baseline): ${BUILDS[0]?.root}. B (candidate): ${BUILDS[1]?.root}. Each build seeds its own database with its own bench/seed.ts and serves it with its own dist/cli/main.js (LOG_LEVEL=info, access log to a file).`,
  '',
  `Load: ${loadTool}, ${CONNECTIONS} connections, ${DURATION_S} s per measurement after a ${WARMUP_S} s warm-up; ${ROUNDS} rounds, each every scenario on A then B (B then A in even rounds), the ceiling right before page 1. ` +
    `The random page draws page 1–${PAGES} at limit ${LIMIT} for every request (wrk: each thread seeded apart). Creates go to a second provider of the same database, so the pages measured stay as seeded. ` +
    `(Before the house, SQLite kept up to 1,000 pages until a commit, so over fewer pages the random page came from that cache; PostgreSQL shares one read among identical pages in flight.)`,
  '',
]
const images = await startImageServer()
try {
  for (const dialect of args.dialects.split(',') as Dialect[]) {
    const section = await benchDialect(dialect, images)
    if (section) {
      sections.push(...section)
      console.log(section.join('\n'))
    }
  }
} finally {
  await images.close()
}
console.log(`written to ${writeResult('house', sections.join('\n'))}`)
process.exit(0)
