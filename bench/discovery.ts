/**
 * Discovery (issue 15, docs/api.md#discovery) against the machine's ceiling, on SQLite and on PostgreSQL. For each
 * database: seed listings of many providers over a 1,000 km × 1,000 km region with cities, one of them dense
 * (50,000 listings within 10 km), straight into the tables (bench/seed.ts, spatial index included); start the
 * service as `npm start` runs it; measure a bare node:http server answering with the very bytes of the 5 km
 * dense-city page (the ceiling) and the discovery scenarios with wrk, the ceiling and the 5 km query in
 * alternating rounds (--rounds). Then seed up to the second size, outside
 * the dense city only, and measure again: the same 5 km query must cost the same, whatever lies outside it.
 * Last, 1-item creates with the spatial index maintained against the build before discovery (--baseline), each
 * on a fresh database.
 *
 *   npm run bench:discovery                                   (100k then 1M, SQLite then PostgreSQL)
 *   npm run bench:discovery -- --sizes 100000 --dialects sqlite --duration 5
 *   npm run bench:discovery -- --baseline /path/to/pre-discovery/dist   (adds the create comparison)
 *   npm run bench:discovery -- --sizes '' --dialects sqlite --baseline /path/to/dist --create-rounds 3   (creates only)
 */
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { openDatabase, type Database } from '../src/db/connection.js'
import { startImageServer, type ImageServer } from '../test/image-server.js'
import { runLoad, UNIQUE, type LoadResult, type RequestKind } from './load.js'
import { DENSE_CITY, discoverKinds, fiveKmPage, inDisc, KM_PER_DEGREE } from './city.js'
import { freshDatabase, settle } from './databases.js'
import { fmt, listingBody, machine, ROOT, startCeiling, startService, writeResult } from './lib.js'
import { seed } from './seed.js'
import { seededRandom as random } from '../test/seeded-random.js'

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100000,1000000' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    dialects: { type: 'string', default: 'sqlite,postgres' },
    /** A build without discovery (dist/ of the commit before it): its creates are the index-less baseline. */
    baseline: { type: 'string' },
    'create-rounds': { type: 'string', default: '2' },
    /** Rounds of the ceiling and the 5 km query, alternating: their ratio is the target, and one run of each moved by ±20%. */
    rounds: { type: 'string', default: '3' },
  },
})
/** No sizes (`--sizes ''`): creates only, with --baseline. */
const SIZES = args.sizes === '' ? [] : args.sizes.split(',').map(Number)
const DURATION_S = Number(args.duration)
const CONNECTIONS = Number(args.connections)
const WARMUP_S = 2
const PER_PROVIDER = 10_000
const DENSE_CITY_LISTINGS = 50_000

/** The region: 1,000 km × 1,000 km around Riyadh's latitude. */
const REGION = { south: 20.2, north: 20.2 + 1000 / KM_PER_DEGREE, west: 41.5, east: 41.5 + 1000 / (KM_PER_DEGREE * Math.cos((24.7 * Math.PI) / 180)) }

const kmFromDenseCity = (p: { latitude: number; longitude: number }) =>
  Math.hypot(
    (p.latitude - DENSE_CITY.latitude) * KM_PER_DEGREE,
    (p.longitude - DENSE_CITY.longitude) * KM_PER_DEGREE * Math.cos((DENSE_CITY.latitude * Math.PI) / 180),
  )

/**
 * Where listings go: the dense city first (its 50,000 within 10 km), then, for everything else, 40 other cities
 * of 20 km (half the listings) and the open region (the other half), never within 12 km of the dense city, so
 * a 5 km query there finds the same listings at every size.
 */
function placer(seedValue: number, nowUnix: number) {
  const next = random(seedValue)
  const cities = Array.from({ length: 40 }, () => ({
    latitude: REGION.south + next() * (REGION.north - REGION.south),
    longitude: REGION.west + next() * (REGION.east - REGION.west),
  })).filter((city) => kmFromDenseCity(city) > 40)
  // Expiries spread over 2 hours, as listings created continuously with the default TTL have them, starting 30
  // minutes ahead: nothing expires while the benchmark runs, so sizes compare like for like.
  const rest = () => ({ expiresAtUnix: nowUnix + 1800 + Math.floor(next() * 7200), discountRate: Math.round(1 + next() * 8) / 10 })
  return {
    dense: () => ({ ...inDisc(next, DENSE_CITY, 10), ...rest() }),
    elsewhere: () => {
      for (;;) {
        const point =
          next() < 0.5
            ? inDisc(next, cities[Math.floor(next() * cities.length)] as (typeof cities)[number], 20)
            : { latitude: REGION.south + next() * (REGION.north - REGION.south), longitude: REGION.west + next() * (REGION.east - REGION.west) }
        if (kmFromDenseCity(point) > 12) return { ...point, ...rest() }
      }
    },
  }
}

/** Seeds listings [from, to) of the dataset: the first 50,000 in the dense city, then elsewhere; 10,000 per provider. */
async function seedRange(database: Database, from: number, to: number, place: ReturnType<typeof placer>): Promise<string> {
  let token = ''
  for (let first = from; first < to; first += PER_PROVIDER) {
    const count = Math.min(PER_PROVIDER, to - first)
    const seeded = await seed(database, count, {
      items: 1,
      providerName: `Bench provider ${first / PER_PROVIDER}`,
      analyze: false,
      place: (seq) => (first + seq - 1 < DENSE_CITY_LISTINGS ? place.dense() : place.elsewhere()),
    })
    token = seeded.token
    if ((first + count) % 100_000 === 0) console.error(`  seeded ${first + count}`)
  }
  return token
}

async function measure(baseUrl: string, kinds: RequestKind[]): Promise<LoadResult> {
  await runLoad(baseUrl, kinds, { connections: CONNECTIONS, durationS: WARMUP_S })
  return runLoad(baseUrl, kinds, { connections: CONNECTIONS, durationS: DURATION_S })
}

interface Row {
  scenario: string
  result: LoadResult
  note?: string
}

const ROUNDS = Number(args.rounds)

/** Several runs as one: mean throughput, mean p50, the worst p99, all failures. */
function meanOf(runs: LoadResult[]): LoadResult {
  const mean = (pick: (run: LoadResult) => number) => runs.reduce((sum, run) => sum + pick(run), 0) / runs.length
  return {
    tool: (runs[0] as LoadResult).tool,
    requests: runs.reduce((sum, run) => sum + run.requests, 0),
    rps: mean((run) => run.rps),
    p50Ms: mean((run) => run.p50Ms),
    p99Ms: Math.max(...runs.map((run) => run.p99Ms)),
    failures: runs.reduce((sum, run) => sum + run.failures, 0),
  }
}

const rounds = (runs: LoadResult[]) =>
  runs.length > 1 ? `mean of ${runs.length} rounds, alternating: ${runs.map((run) => fmt(run.rps)).join(', ')} req/s; worst p99` : undefined

async function measureDiscovery(databaseUrl: string, token: string, marketplaceToken: string): Promise<Row[]> {
  const service = await startService({ DATABASE_URL: databaseUrl, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true' }, token)
  const kinds = (radiusKm: number, sort: 'distance' | 'ending_soon') => discoverKinds(marketplaceToken, radiusKm, sort)
  const rows: Row[] = []
  try {
    const bytes = await fiveKmPage(service.baseUrl, marketplaceToken)
    // The target is a ratio of two runs, each of which moved by ±20% between minutes: the ceiling and the 5 km
    // query alternate, ROUNDS times, and their means are compared.
    const ceiling = await startCeiling(bytes)
    const ceilingRuns: LoadResult[] = []
    const fiveKmRuns: LoadResult[] = []
    try {
      for (let round = 0; round < ROUNDS; round++) {
        ceilingRuns.push(await measure(ceiling.baseUrl, [{ weight: 1, method: 'GET', path: '/', headers: {} }]))
        fiveKmRuns.push(await measure(service.baseUrl, kinds(5, 'distance')))
      }
    } finally {
      ceiling.stop()
    }
    rows.push({ scenario: `ceiling: node:http, same bytes as the 5 km page (${fmt(bytes.length)} B)`, result: meanOf(ceilingRuns), note: rounds(ceilingRuns) })
    rows.push({ scenario: '5 km, distance, limit 20, dense city', result: meanOf(fiveKmRuns), note: rounds(fiveKmRuns) })
    for (const [radiusKm, sort] of [
      [50, 'distance'],
      [5, 'ending_soon'],
      [50, 'ending_soon'],
    ] as const) {
      rows.push({ scenario: `${radiusKm} km, ${sort}, limit 20, dense city`, result: await measure(service.baseUrl, kinds(radiusKm, sort)) })
    }
  } finally {
    await service.stop()
  }
  return rows
}

function table(rows: Row[]): string[] {
  const ceiling = rows[0]?.result.rps ?? NaN
  return [
    '| scenario | req/s | p50 | p99 | of ceiling | failures |',
    '|---|---:|---:|---:|---:|---:|',
    ...rows.map(
      ({ scenario, result, note }) =>
        `| ${scenario}${note ? ` (${note})` : ''} | ${fmt(result.rps)} | ${fmt(result.p50Ms, 2)} ms | ${fmt(result.p99Ms, 2)} ms | ${fmt((100 * result.rps) / ceiling, 1)}% | ${result.failures} |`,
    ),
  ]
}

async function benchDialect(dialect: 'sqlite' | 'postgres'): Promise<string[]> {
  const fresh = await freshDatabase(dialect)
  const lines: string[] = [`## ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`, '']
  const nowUnix = Math.floor(Date.now() / 1000)
  const place = placer(20261124, nowUnix)
  let seededTo = 0
  let token = ''
  const perSize: Array<{ size: number; rows: Row[] }> = []
  try {
    for (const size of SIZES) {
      const started = performance.now()
      const database = openDatabase(fresh.url)
      try {
        token = await seedRange(database, seededTo, size, place)
        await settle(database)
      } finally {
        await database.close()
      }
      const seconds = (performance.now() - started) / 1000
      console.error(`${dialect}: seeded up to ${size} in ${seconds.toFixed(1)} s`)
      seededTo = size
      const marketplaceDb = openDatabase(fresh.url)
      const { MarketplaceRepository } = await import('../src/providers/marketplaces.js')
      const marketplace = await new MarketplaceRepository(marketplaceDb).create(`bench ${size}`, Date.now())
      await marketplaceDb.close()
      const rows = await measureDiscovery(fresh.url, token, marketplace.token)
      perSize.push({ size, rows })
      lines.push(
        `### ${fmt(size)} active listings (seeded ${seconds.toFixed(0)} s${perSize.length > 1 ? ', added to the previous size, none within 12 km of the dense city' : ''})`,
        '',
        ...table(rows),
        '',
      )
    }
  } finally {
    await fresh.drop()
  }
  const rpsOf = (rows: Row[], prefix: string) => rows.find((row) => row.scenario.startsWith(prefix))?.result.rps ?? NaN
  const last = perSize.at(-1) as { size: number; rows: Row[] }
  lines.push(
    `At ${fmt(last.size)}: the 50 km query costs ${fmt(rpsOf(last.rows, '5 km, distance') / rpsOf(last.rows, '50 km, distance'), 2)}× the 5 km one (distance), ${fmt(rpsOf(last.rows, '5 km, ending_soon') / rpsOf(last.rows, '50 km, ending_soon'), 2)}× (ending_soon).`,
  )
  if (perSize.length > 1) {
    const first = perSize[0] as { size: number; rows: Row[] }
    for (const prefix of ['5 km, distance', '5 km, ending_soon']) {
      lines.push(
        `${prefix}: ${fmt(last.size)} costs ${fmt(rpsOf(first.rows, prefix) / rpsOf(last.rows, prefix), 2)}× ${fmt(first.size)} (req/s at ${fmt(first.size)} ÷ req/s at ${fmt(last.size)}).`,
      )
    }
  }
  lines.push('')
  return lines
}

/** 1-item creates on a fresh database: this build (spatial index maintained) against the baseline build. */
async function benchCreates(dialect: 'sqlite' | 'postgres', images: ImageServer, baseline: string): Promise<string[]> {
  const body = JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), [undefined]))
  const builds = [
    ['this build (index maintained)', join(ROOT, 'dist')],
    ['baseline (no spatial index)', baseline],
  ] as const
  const results = new Map<string, number[]>()
  for (let round = 0; round < Number(args['create-rounds']); round++) {
    for (const [name, dist] of builds) {
      const fresh = await freshDatabase(dialect)
      try {
        const service = await startService({ DATABASE_URL: fresh.url, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true' }, undefined, dist)
        try {
          if (dialect === 'postgres') {
            // No demo provider on PostgreSQL: one through the CLI's repository, then ANALYZE after a first few creates.
            const database = openDatabase(fresh.url)
            const { ProviderRepository } = await import('../src/providers/repository.js')
            service.token = (await new ProviderRepository(database).create({ name: 'bench' }, Date.now())).token.token
            await database.close()
          }
          const kind: RequestKind = {
            weight: 1,
            method: 'POST',
            path: '/api/v1/listing/create',
            headers: { authorization: `Bearer ${service.token}`, 'content-type': 'application/json' },
            body,
          }
          await runLoad(service.baseUrl, [kind], { connections: CONNECTIONS, durationS: WARMUP_S })
          if (dialect === 'postgres') {
            const database = openDatabase(fresh.url)
            await sql`analyze`.execute(database.kysely)
            await database.close()
          }
          const result = await runLoad(service.baseUrl, [kind], { connections: CONNECTIONS, durationS: DURATION_S })
          if (result.failures > 0) throw new Error(`${name}: ${result.failures} creates failed`)
          results.set(name, [...(results.get(name) ?? []), result.rps])
        } finally {
          await service.stop()
        }
      } finally {
        await fresh.drop()
      }
    }
  }
  const [mine, base] = builds.map(([name]) => results.get(name) ?? [])
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length
  return [
    `### ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}: create, 1 item, ${CONNECTIONS} connections, rounds alternating`,
    '',
    '| build | creates/s, each round | mean |',
    '|---|---|---:|',
    ...builds.map(([name]) => `| ${name} | ${(results.get(name) ?? []).map((v) => fmt(v)).join(', ')} | ${fmt(mean(results.get(name) ?? []))} |`),
    '',
    `This build ÷ baseline: ${fmt((100 * mean(mine as number[])) / mean(base as number[]), 1)}%.`,
    '',
  ]
}

const dialects = args.dialects.split(',') as Array<'sqlite' | 'postgres'>
const sections: string[] = [
  `# Discovery benchmark — ${new Date().toISOString()}`,
  '',
  `Machine: ${machine()}. Load: wrk, ${CONNECTIONS} connections, ${DURATION_S} s per scenario after a ${WARMUP_S} s warm-up.`,
  `Command: \`npm run bench:discovery -- ${process.argv.slice(2).join(' ')}\``,
  '',
  `Data: listings of ${PER_PROVIDER.toLocaleString('en-US')} per provider, 1 item each, over 1,000 km × 1,000 km; the dense city holds ${DENSE_CITY_LISTINGS.toLocaleString('en-US')} within 10 km of (24.7136, 46.6753); 40 other cities of 20 km hold half the rest, the open region the other half. Queries: 16 points within 2 km of the dense city's centre, in turn.`,
  '',
]
for (const dialect of SIZES.length > 0 ? dialects : []) {
  sections.push(...(await benchDialect(dialect)))
  console.error(sections.join('\n'))
}
if (args.baseline) {
  const images = await startImageServer()
  sections.push('## Writes with the spatial index maintained', '')
  for (const dialect of dialects) sections.push(...(await benchCreates(dialect, images, args.baseline)))
  await images.close()
}
console.log(sections.join('\n'))
console.error(`written to ${writeResult('discovery', sections.join('\n'))}`)
process.exit(0)
