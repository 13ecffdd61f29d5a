/**
 * `npx tsx bench/thread-cpu.ts --baseline <root>`: where a request's CPU goes, thread by thread, for two builds in one
 * run (rounds alternating). Each build serves the house's pages database (bench/builds.ts, --listings small: only
 * the creates provider's listing is used) and answers PATCHes of one listing and 1-item creates; around each timed run
 * (after a warm-up that is not counted) the service's threads' CPU is read from /proc/<pid>/task/<tid>/stat. The
 * main thread is the process's own task; "busiest other" is, on SQLite, the writer thread.
 *
 *   npx tsx bench/thread-cpu.ts --baseline /work/base-0492 --dialects sqlite --rounds 2 [--scenarios patch,create1,create2-places]
 */
import { readdirSync, readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { startImageServer } from '../test/image-server.js'
import { AB_OPTIONS, buildsOf, createRequest, describeBuild, loadBuild, pagesOptions, servePages, type ServedPages } from './builds.js'
import { DIALECT_TITLES, postgresAnswers, type Dialect } from './databases.js'
import { cleanUpOnSignals, fmt, listingBody, machine, medianOf, writeResult } from './lib.js'
import { COUNTER, runLoad, UNIQUE, type RequestKind } from './load.js'

const { values: args } = parseArgs({ options: { ...AB_OPTIONS, listings: { type: 'string', default: '1000' } } })
if (!args.baseline) {
  console.error(
    'usage: npx tsx bench/thread-cpu.ts --baseline <root> [--candidate <root>] [--dialects sqlite,postgres] [--rounds 2] [--duration 8] [--scenarios patch,create1,create2-places]',
  )
  process.exit(2)
}
const ROUNDS = Number(args.rounds)
const DURATION_S = Number(args.duration)
const WARMUP_S = 3
const builds = buildsOf(args.baseline, args.candidate)
for (const build of builds) await loadBuild(build.root)
const cleanups = cleanUpOnSignals('stopping the services and dropping the databases')
const images = await startImageServer()

// /proc counts CPU in clock ticks, 100 a second on Linux/x86.
const TICKS_PER_SECOND = 100

/** Stands in for a latitude in a body's JSON until the body is text. */
const PLACE = '@PLACE@'

/** CPU seconds so far of each thread of `pid`, by thread id. */
function threadCpu(pid: number): Map<string, number> {
  const found = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
      found.set(tid, (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND)
    } catch {
      // the thread ended meanwhile
    }
  }
  return found
}

const SCENARIOS = {
  patch: (served: ServedPages): RequestKind => ({
    weight: 1,
    method: 'PATCH',
    path: `/api/v1/listing/${served.checkListingId}`,
    headers: { authorization: `Bearer ${served.createsToken}`, 'content-type': 'application/json' },
    body: `{"items":[{"position":0,"quantity":${COUNTER}}]}`,
  }),
  create1: (served: ServedPages): RequestKind => createRequest(served, JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), [undefined]))),
  // 2-item creates each at its own place, as the discovery seeding (compare.ts's create-many) but of one provider:
  // every one lands elsewhere in the discovery indexes. Latitudes 24.51…24.5999999 along one meridian.
  'create2-places': (served: ServedPages): RequestKind =>
    createRequest(
      served,
      JSON.stringify({
        ...listingBody(UNIQUE, images.url('/img/brand.png'), [undefined, undefined]),
        location: { latitude: PLACE, longitude: 46.6753 },
      }).replace(`"${PLACE}"`, `24.5${COUNTER}`),
    ),
}
const CONNECTIONS: Record<keyof typeof SCENARIOS, number> = { patch: 50, create1: 16, 'create2-places': 50 }
const chosen = (args.scenarios?.split(',') ?? Object.keys(SCENARIOS)) as Array<keyof typeof SCENARIOS>
for (const name of chosen) if (!(name in SCENARIOS)) throw new Error(`unknown scenario ${name}: one of ${Object.keys(SCENARIOS).join(', ')}`)

interface Measured {
  rps: number
  /** CPU per request, µs. */
  main: number
  busiestOther: number
  allOthers: number
}

async function measure(served: ServedPages, scenario: keyof typeof SCENARIOS): Promise<Measured> {
  const pid = served.service.child.pid as number
  const kinds = [SCENARIOS[scenario](served)]
  const options = { connections: CONNECTIONS[scenario], durationS: WARMUP_S }
  await runLoad(served.service.baseUrl, kinds, options)
  const before = threadCpu(pid)
  const result = await runLoad(served.service.baseUrl, kinds, { ...options, durationS: DURATION_S })
  if (result.failures > 0) throw new Error(`${scenario}: ${result.failures} failures`)
  const after = threadCpu(pid)
  const perRequest = (tid: string) => ((after.get(tid) ?? 0) - (before.get(tid) ?? 0)) / result.requests / 1e-6
  const others = [...after.keys()].filter((tid) => tid !== String(pid)).map(perRequest)
  return { rps: result.rps, main: perRequest(String(pid)), busiestOther: Math.max(0, ...others), allOthers: others.reduce((a, b) => a + b, 0) }
}

const sections = [
  '# CPU per request, thread by thread',
  '',
  `Machine: ${machine()}. ${new Date().toISOString()}.`,
  `Command: \`npx tsx bench/thread-cpu.ts ${process.argv.slice(2).join(' ')}\``,
  '',
  ...builds.map((build) => `- ${describeBuild(build)}`),
  '',
]
try {
  for (const dialect of args.dialects.split(',') as Dialect[]) {
    if (dialect === 'postgres' && !(await postgresAnswers())) continue
    const served: ServedPages[] = []
    for (const build of builds) served.push(await servePages(dialect, build, images, cleanups, pagesOptions(Number(args.listings), undefined)))
    const runs = new Map<string, Measured[]>()
    for (let round = 0; round < ROUNDS; round++) {
      for (const scenario of chosen) {
        for (const i of round % 2 === 0 ? [0, 1] : [1, 0]) {
          const side = served[i] as ServedPages
          const measured = await measure(side, scenario)
          const key = `${scenario} ${side.build.label}`
          runs.set(key, [...(runs.get(key) ?? []), measured])
          console.error(
            `${dialect} round ${round + 1}: ${key} ${fmt(measured.rps)} req/s, main ${fmt(measured.main)} µs, busiest other ${fmt(measured.busiestOther)} µs`,
          )
        }
      }
    }
    sections.push(
      `## ${DIALECT_TITLES[dialect]}`,
      '',
      '| scenario | build | req/s (median) | main thread µs/request | busiest other thread | all other threads |',
      '|---|---|---:|---:|---:|---:|',
    )
    for (const [key, measured] of runs) {
      const [scenario, label] = key.split(' ')
      const median = (pick: (m: Measured) => number) => fmt(medianOf(measured.map(pick)))
      const each = (pick: (m: Measured) => number) => measured.map((m) => fmt(pick(m))).join(', ')
      sections.push(
        `| ${scenario} | ${label} | ${median((m) => m.rps)} | ${each((m) => m.main)} | ${each((m) => m.busiestOther)} | ${each((m) => m.allOthers)} |`,
      )
    }
    sections.push('')
    await cleanups.run()
  }
} finally {
  await cleanups.run()
  // Not among the clean-ups, which run after each database: the next one's seeding needs it.
  await images.close()
}
console.log(`written to ${writeResult('thread-cpu', sections.join('\n'))}`)
