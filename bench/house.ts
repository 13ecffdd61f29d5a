/**
 * The house floors (issue 26): the rebuilt code ("candidate", B) against the code before it ("baseline", A), in
 * one run, rounds alternating, on SQLite and on PostgreSQL, each build on a pages database of its own seeding
 * (builds.ts's servePages: one provider of N listings, and a second that receives the creates, so the pages measured
 * stay the seeded ones throughout). Both services run; the one not measured is idle. Each round runs every
 * scenario (builds.ts's pagesRequests: random, page1, last, create1) on A then B (B then A the next round, to
 * cancel drift), the ceiling (B's page 1 from bench/ceiling-server.mjs) right before page 1, each measurement
 * after a 2 s warm-up. compare.ts (`npm run bench`) measures the same and more against issue 34's targets.
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
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import { startImageServer, type ImageServer } from '../test/image-server.js'
import { AB_OPTIONS, buildsOf, describeBuild, pagesOptions, pagesRequests, pagesTitle, PAGES_NOTE, servePages, type ServedPages } from './builds.js'
import { abHead, abRow, Rounds, runRounds } from './rounds.js'
import { DIALECT_TITLES, postgresAnswers, type Dialect } from './databases.js'
import { cleanUpOnSignals, fmt, machine, startCeiling, writeResult } from './lib.js'
import { loadTool, runWarmedUp, type LoadResult, type RequestKind } from './load.js'

const { values: args } = parseArgs({ options: AB_OPTIONS })
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
const WARMUP_S = 2
const PAGES_OPTIONS = pagesOptions(LISTINGS, args.pages)
const PAGES = PAGES_OPTIONS.pages

const BUILDS = buildsOf(args.baseline, args.candidate)

/** Everything to undo, newest first: run at the end of a dialect, on failure, and on Ctrl-C. */
const cleanups = cleanUpOnSignals('stopping the services and dropping the databases')

const measure = (baseUrl: string, kinds: RequestKind[]): Promise<LoadResult> =>
  runWarmedUp(baseUrl, kinds, { connections: CONNECTIONS, durationS: DURATION_S, warmupS: WARMUP_S })

async function benchDialect(dialect: Dialect, images: ImageServer): Promise<string[] | undefined> {
  if (dialect === 'postgres' && !(await postgresAnswers())) return undefined
  const record = new Rounds()
  const served: ServedPages[] = []
  try {
    // One build's seed at a time; once both are served, the one not measured is idle.
    for (const build of BUILDS) served.push(await servePages(dialect, build, images, cleanups, PAGES_OPTIONS))
    const b = served[1] as ServedPages
    const ceiling = SCENARIOS.includes('page1') ? await startCeiling(b.pageOneBytes) : undefined
    if (ceiling) cleanups.add(() => ceiling.stop())
    await runRounds(
      {
        name: dialect,
        rounds: ROUNDS,
        scenarios: SCENARIOS,
        sides: served.map((one) => ({ label: one.build.label, one })),
        measure: (scenario, { one }) => measure(one.service.baseUrl, pagesRequests(scenario as Scenario, one, images, PAGES_OPTIONS)),
        ceiling: (scenario) => (scenario === 'page1' && ceiling ? measure(ceiling.baseUrl, [{ weight: 1, method: 'GET', path: '/', headers: {} }]) : undefined),
      },
      record,
    )
  } finally {
    await cleanups.run()
  }

  const [a, b] = served as [ServedPages, ServedPages]
  const failures = (key: string) => record.failures(key)
  const lines = [
    `## ${DIALECT_TITLES[dialect]} — ${fmt(LISTINGS)} listings of one provider`,
    '',
    `Seeded by each build's own bench/seed.ts: A in ${a.seedSeconds.toFixed(1)} s, B in ${b.seedSeconds.toFixed(1)} s. ` +
      `Page 1 is ${fmt(a.pageOneBytes.length)} B from A, ${fmt(b.pageOneBytes.length)} B from B.`,
    '',
    ...abHead('A', 'B'),
    ...SCENARIOS.map((scenario) => abRow(record, pagesTitle(scenario, PAGES_OPTIONS), `${scenario} A`, `${scenario} B`)),
    '',
  ]
  if (record.has('page1 ceiling')) {
    lines.push(
      `Ceiling (node:http answering with B's page 1, ${fmt(b.pageOneBytes.length)} B): ${record.list('page1 ceiling', (run) => fmt(run.rps))} req/s (median ${fmt(record.median('page1 ceiling'))}), ` +
        `p99 ${record.list('page1 ceiling', (run) => fmt(run.p99Ms, 1))} ms, ${failures('page1 ceiling')} failures.`,
      '',
    )
  }
  const want = (scenario: Scenario) => SCENARIOS.includes(scenario)
  const mark = (ok: boolean) => (ok ? '✓' : '✗')
  const floors: string[] = []
  const anyFailures = (scenario: Scenario) => failures(`${scenario} A`) + failures(`${scenario} B`) > 0
  const failed = (scenario: Scenario) => (anyFailures(scenario) ? ' (failures: see the table)' : '')
  if (want('random')) {
    const ratio = record.median('random B') / record.median('random A')
    floors.push(`- ${mark(ratio >= 0.9 && !anyFailures('random'))} random page: B ÷ A = ${fmt(ratio, 3)} (floor 0.90)${failed('random')}`)
  }
  if (want('page1')) {
    const share = record.median('page1 B') / record.median('page1 ceiling')
    floors.push(`- ${mark(share >= 0.25 && failures('page1 B') === 0)} page 1: B = ${fmt(100 * share, 1)}% of the ceiling (floor 25%)${failed('page1')}`)
  }
  if (want('page1') && want('last')) {
    const gap = Math.abs(record.median('last B') - record.median('page1 B')) / record.median('page1 B')
    floors.push(
      `- ${mark(gap <= 0.1 && failures('last B') === 0)} last page: B's |last − page 1| ÷ page 1 = ${fmt(100 * gap, 1)}% (ceiling 10%)${failed('last')}`,
    )
  }
  if (want('create1')) {
    const ratio = record.median('create1 B') / record.median('create1 A')
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
  `A (baseline): ${describeBuild(BUILDS[0])}. B (candidate): ${describeBuild(BUILDS[1])}. Each build seeds its own database with its own bench/seed.ts and serves it with its own dist/cli/main.js (LOG_LEVEL=info, access log to a file).`,
  '',
  `Load: ${loadTool}, ${CONNECTIONS} connections, ${DURATION_S} s per measurement after a ${WARMUP_S} s warm-up; ${ROUNDS} rounds, each every scenario on A then B (B then A in even rounds), the ceiling right before page 1. ` +
    `The random page draws page 1–${PAGES} at limit ${PAGES_OPTIONS.limit} for every request (wrk: each thread seeded apart). Creates go to a second provider of the same database, so the pages measured stay as seeded. ` +
    PAGES_NOTE,
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
