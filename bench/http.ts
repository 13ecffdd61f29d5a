/**
 * Throughput and latency of the service against the machine's own ceiling (issue 4), on SQLite and on
 * PostgreSQL (when it answers). For each database: seed N listings of one provider, start the service as
 * `npm start` runs it, start a bare node:http server answering with the very bytes of page 1 (the ceiling),
 * then load each scenario with wrk (or autocannon; at a fixed rate, open-loop.ts) and print one table.
 *
 *   npm run bench:http -- --listings 100000 --duration 10 --connections 50 --dialects sqlite,postgres
 *   npm run bench:http -- --listings 1000000        (the 1M figures; seeding takes a few minutes)
 *   npm run bench:http -- --mix-duration 300        (the 5-minute mixed run, memory sampled throughout)
 */
import http from 'node:http'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openDatabase } from '../src/db/connection.js'
import { createTestDatabase } from '../test/helper.js'
import { startImageServer, type ImageServer } from '../test/image-server.js'
import { loadTool, runLoad, UNIQUE, type LoadResult, type RequestKind } from './load.js'
import { cpuSeconds, cpuSecondsOfCommand, listingBody, machine, sampleRss, startCeiling, startService, writeResult, type RunningService } from './lib.js'
import { seed } from './seed.js'

const { values: args } = parseArgs({
  options: {
    listings: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '10' },
    'mix-duration': { type: 'string' },
    connections: { type: 'string', default: '50' },
    dialects: { type: 'string', default: 'sqlite,postgres' },
    // Another build's dist/ (e.g. a worktree of an earlier commit), to measure it with the same harness.
    service: { type: 'string' },
    // A subset, to iterate on one figure: e.g. --scenarios page1,create1-rate (the ceiling always runs).
    scenarios: { type: 'string' },
    // RATE_LIMIT_PER_MINUTE of the service: 0 (off) by default; a limit no run reaches measures what counting costs.
    'rate-limit': { type: 'string', default: '0' },
  },
})
const ALL_SCENARIOS = [
  'page1',
  'page1-rate',
  'page1-tenth',
  'page1-50',
  'last',
  'random',
  'create1',
  'create100',
  'create1-rate',
  'create100-rate',
  'mix',
  // Transport (issue 16): compressed pages, a 304 to a poller, the largest page there is.
  'page1-br',
  'page1-gzip',
  'page1-50-br',
  'page1-50-gzip',
  'page1-304',
  'big',
  'big-br',
  'big-gzip',
]
const SCENARIOS = new Set(args.scenarios?.split(',') ?? ALL_SCENARIOS)
/** A run of some scenarios only: named so in the command line it records and in its result file. */
const SUBSET = SCENARIOS.size < ALL_SCENARIOS.length
const want = (scenario: string) => SCENARIOS.has(scenario)
const LISTINGS = Number(args.listings)
const DURATION_S = Number(args.duration)
const MIX_DURATION_S = Number(args['mix-duration'] ?? args.duration)
const CONNECTIONS = Number(args.connections)
const WARMUP_S = 2

interface Row {
  /** The --scenarios name. */
  key: string
  scenario: string
  result: LoadResult
  note?: string
}

function createBody(images: ImageServer, itemCount: number): string {
  // With several items, each has its own image, the same on every create: after the first they come from the cache.
  const itemImages = itemCount > 1 ? Array.from({ length: itemCount }, (_, i) => images.url(`/img/item-${i}.png`)) : [undefined]
  return JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), itemImages))
}

/** As many requests as the server answers (wrk), after a warm-up. */
async function measure(baseUrl: string, kinds: RequestKind[], durationS = DURATION_S): Promise<LoadResult> {
  await runLoad(baseUrl, kinds, { connections: CONNECTIONS, durationS: WARMUP_S })
  return runLoad(baseUrl, kinds, { connections: CONNECTIONS, durationS })
}

/**
 * The issue's throughput targets (page 1: "≈ 4k rps"): p99 is also measured at these rates, open loop, not
 * only at saturation, where every connection queues and latency is connections ÷ throughput.
 */
const TARGET_RATES = { pageOne: 4000, createOne: 1000, createHundred: 400 }

const fmtBytes = (bytes: number) => (bytes >= 10_240 ? `${(bytes / 1024).toFixed(0)} KiB` : `${bytes} B`)

async function benchDialect(dialect: 'sqlite' | 'postgres', images: ImageServer): Promise<string[] | undefined> {
  let databaseUrl: string
  let drop = async () => {}
  if (dialect === 'sqlite') {
    databaseUrl = `sqlite:${join(mkdtempSync(join(tmpdir(), 'listing-bench-')), 'bench.db')}`
  } else {
    // The tests' own way to a fresh database (at TEST_POSTGRES_URL); no answer means no PostgreSQL half.
    const fresh = await createTestDatabase('postgres').catch((error: unknown) => {
      console.warn(`PostgreSQL does not answer (${(error as Error).message}): its half is skipped`)
    })
    if (!fresh) return undefined
    databaseUrl = fresh.url
    drop = fresh.drop
  }

  const seedStarted = performance.now()
  const database = openDatabase(databaseUrl)
  const seeded = await seed(database, LISTINGS, {
    onProgress: (done) => {
      if (done % 100_000 === 0) console.error(`  ${dialect}: seeded ${done}`)
    },
  })
  // Another provider whose page 1 at limit 50 is the largest page there is: 50 listings of 100 items (~760 KB).
  const big = [...SCENARIOS].some((scenario) => scenario.startsWith('big')) ? await seed(database, 50, { items: 100, providerName: 'Bench Market' }) : undefined
  await database.close()
  const seedSeconds = (performance.now() - seedStarted) / 1000
  console.error(`${dialect}: seeded ${LISTINGS} listings in ${seedSeconds.toFixed(1)} s`)

  const service: RunningService = await startService(
    { DATABASE_URL: databaseUrl, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true', RATE_LIMIT_PER_MINUTE: args['rate-limit'] },
    seeded.token,
    args.service,
  )
  const auth = { authorization: `Bearer ${service.token}` }
  const get = (path: string): RequestKind => ({ weight: 1, method: 'GET', path, headers: auth })
  const post = (body: string): RequestKind => ({
    weight: 1,
    method: 'POST',
    path: '/api/v1/listing/create',
    headers: { ...auth, 'content-type': 'application/json' },
    body,
  })
  const lastPage = Math.ceil(LISTINGS / 10)
  const page1 = await fetch(`${service.baseUrl}/api/v1/listing?page=1&limit=10`, { headers: auth })
  const pageBytes = Buffer.from(await page1.arrayBuffer())
  if (page1.status !== 200) throw new Error(`page 1 answered ${page1.status}: ${pageBytes.toString('utf8')}`)
  const ceiling = await startCeiling(pageBytes)

  const rows: Row[] = []
  const run = async (key: string, scenario: string, load: () => Promise<LoadResult | Omit<Row, 'key' | 'scenario'>>) => {
    if (!want(key)) return
    const loaded = await load()
    rows.push({ key, scenario, ...('result' in loaded ? loaded : { result: loaded }) })
  }
  /**
   * A fixed rate, with the CPU each request cost: the service's process (every thread), PostgreSQL's processes,
   * and this one (the open-loop generator). All share the machine's cores: their sum times the rate is the share
   * of the machine a rate needs.
   */
  const atRate = async (kinds: RequestKind[], rate: number) => {
    await runLoad(service.baseUrl, kinds, { connections: CONNECTIONS, durationS: WARMUP_S, rate })
    const pid = service.child.pid as number
    const before = { service: cpuSeconds(pid), postgres: cpuSecondsOfCommand('postgres'), generator: process.cpuUsage() }
    const result = await runLoad(service.baseUrl, kinds, { connections: CONNECTIONS, durationS: DURATION_S, rate })
    const requests = result.rps * DURATION_S
    const ms = (seconds: number) => `${((seconds * 1000) / requests).toFixed(2)} ms`
    const generator = process.cpuUsage(before.generator)
    const parts = [
      `service ${ms(cpuSeconds(pid) - before.service)}`,
      ...(dialect === 'postgres' ? [`PostgreSQL ${ms(cpuSecondsOfCommand('postgres') - before.postgres)}`] : []),
      `generator ${ms((generator.user + generator.system) / 1e6)}`,
    ]
    return { result, note: `CPU per request: ${parts.join(', ')}` }
  }
  /**
   * As many requests as the service answers, with the service's CPU per request (every thread: zlib's pool
   * compresses) and the size of one answer: what compression and 304s cost and save.
   */
  const saturated = async (kinds: RequestKind[]) => {
    const [kind] = kinds as [RequestKind]
    // node:http, not fetch: fetch asks for compression itself and decodes what it gets.
    const sample = await new Promise<{ status: number; sent: number }>((resolve, reject) => {
      http
        .get(new URL(kind.path, service.baseUrl), { headers: kind.headers }, (response) => {
          let sent = 0
          response.on('data', (chunk: Buffer) => (sent += chunk.length))
          response.on('end', () => resolve({ status: response.statusCode ?? 0, sent }))
        })
        .on('error', reject)
    })
    await runLoad(service.baseUrl, kinds, { connections: CONNECTIONS, durationS: WARMUP_S })
    const pid = service.child.pid as number
    const cpuBefore = cpuSeconds(pid)
    const result = await runLoad(service.baseUrl, kinds, { connections: CONNECTIONS, durationS: DURATION_S })
    const perRequestMs = ((cpuSeconds(pid) - cpuBefore) * 1000) / (result.rps * DURATION_S)
    return { result, note: `service CPU ${perRequestMs.toFixed(3)} ms/request; ${sample.status}, ${fmtBytes(sample.sent)} sent` }
  }
  try {
    rows.push({ key: 'ceiling', scenario: 'ceiling: node:http, same bytes as page 1', result: await measure(ceiling.baseUrl, [get('/')]) })
    const page1 = get('/api/v1/listing?page=1&limit=10')
    await run('page1', 'page 1, limit 10', () => measure(service.baseUrl, [page1]))
    await run('page1-rate', `page 1, limit 10, at ${TARGET_RATES.pageOne}/s`, () => atRate([page1], TARGET_RATES.pageOne))
    // The issue's page target is a share of the ceiling ("≥ 10% … ≈ 4k rps" on its machine): p99 at that share of
    // this run's ceiling, for machines where the ceiling is far from 40k.
    const tenthOfCeiling = Math.round((rows[0] as Row).result.rps / 10)
    await run('page1-tenth', `page 1, limit 10, at 10% of the ceiling (${tenthOfCeiling}/s)`, () => atRate([page1], tenthOfCeiling))
    await run('page1-50', 'page 1, limit 50', () => measure(service.baseUrl, [get('/api/v1/listing?page=1&limit=50')]))
    await run('last', `last page (${lastPage}), limit 10`, () => measure(service.baseUrl, [get(`/api/v1/listing?page=${lastPage}&limit=10`)]))
    // Pages 1–100 drawn at random per request: what many providers' clients paging about look like to the page query.
    const randomPages = Array.from({ length: 100 }, (_, i) => get(`/api/v1/listing?page=${i + 1}&limit=10`))
    await run('random', 'a random page of 1–100, limit 10', () => measure(service.baseUrl, randomPages))
    const encoded = (kind: RequestKind, encoding: string) => ({ ...kind, headers: { ...kind.headers, 'accept-encoding': encoding } })
    const page50 = get('/api/v1/listing?page=1&limit=50')
    for (const encoding of ['br', 'gzip']) {
      await run(`page1-${encoding}`, `page 1, limit 10, Accept-Encoding: ${encoding}`, () => saturated([encoded(page1, encoding)]))
      await run(`page1-50-${encoding}`, `page 1, limit 50, Accept-Encoding: ${encoding}`, () => saturated([encoded(page50, encoding)]))
    }
    if (want('page1-304')) {
      const etag = (await fetch(`${service.baseUrl}${page1.path}`, { headers: page1.headers })).headers.get('etag') as string
      await run('page1-304', 'page 1, limit 10, If-None-Match: its ETag (304)', () =>
        saturated([{ ...page1, headers: { ...page1.headers, 'if-none-match': etag } }]),
      )
    }
    if (big) {
      const bigPage = { ...get('/api/v1/listing?page=1&limit=50'), headers: { authorization: `Bearer ${big.token}` } }
      await run('big', 'page 1, limit 50, 100 items each (no Accept-Encoding)', () => saturated([bigPage]))
      for (const encoding of ['br', 'gzip']) {
        await run(`big-${encoding}`, `page 1, limit 50, 100 items each, Accept-Encoding: ${encoding}`, () => saturated([encoded(bigPage, encoding)]))
      }
    }
    const oneItem = createBody(images, 1)
    const hundredItems = createBody(images, 100)
    // Fill the image cache once, as a provider's earlier creates would have.
    await fetch(`${service.baseUrl}/api/v1/listing/create`, { method: 'POST', headers: post('').headers, body: hundredItems.replace(UNIQUE, 'warm-cache') })
    await run('create1', 'create, 1 item', () => measure(service.baseUrl, [post(oneItem)]))
    await run('create100', 'create, 100 items (images cached)', () => measure(service.baseUrl, [post(hundredItems)]))
    await run('create1-rate', `create, 1 item, at ${TARGET_RATES.createOne}/s`, () => atRate([post(oneItem)], TARGET_RATES.createOne))
    await run('create100-rate', `create, 100 items, at ${TARGET_RATES.createHundred}/s`, () => atRate([post(hundredItems)], TARGET_RATES.createHundred))
    if (want('mix')) {
      const mix = [{ ...page1, weight: 9 }, post(oneItem)]
      const sampled = await sampleRss(service.child.pid as number, measure(service.baseUrl, mix, MIX_DURATION_S))
      const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`
      rows.push({
        key: 'mix',
        scenario: `mix: 90% page 1 / 10% create, ${MIX_DURATION_S} s`,
        result: sampled.result,
        note: `RSS ${mib(sampled.afterWarmup)} after warm-up → ${mib(sampled.end)} at end (peak ${mib(sampled.peak)})`,
      })
    }
  } finally {
    ceiling.stop()
    await service.stop()
    await drop()
  }

  const rps = (key: string) => rows.find((row) => row.key === key)?.result.rps ?? NaN
  const ceilingRps = rps('ceiling')
  const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
  return [
    `## ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} — ${fmt(LISTINGS)} listings of one provider (seeded in ${seedSeconds.toFixed(1)} s)`,
    '',
    '| scenario | req/s | p50 | p99 | of ceiling | failures | load, notes |',
    '|---|---:|---:|---:|---:|---:|---|',
    ...rows.map(
      ({ scenario, result, note }) =>
        `| ${scenario} | ${fmt(result.rps)} | ${fmt(result.p50Ms, 2)} ms | ${fmt(result.p99Ms, 2)} ms | ${fmt((100 * result.rps) / ceilingRps, 1)}% | ${result.failures} | ${result.tool}${note ? `; ${note}` : ''} |`,
    ),
    '',
    ...(want('page1') && want('last') ? [`Last page costs ${fmt(rps('page1') / rps('last'), 2)}× page 1 (req/s of page 1 ÷ req/s of the last page).`, ''] : []),
  ]
}

const images = await startImageServer()
const sections: string[] = [
  `# HTTP benchmark — ${new Date().toISOString()}`,
  '',
  `Machine: ${machine()}. Load: ${loadTool}, ${CONNECTIONS} connections, ${DURATION_S} s per scenario after a ${WARMUP_S} s warm-up.`,
  `Service: \`node ${args.service ?? 'dist'}/cli/main.js serve\` (LOG_LEVEL=info, access log written to a file). Command: \`npm run bench:http -- --listings ${LISTINGS} --duration ${DURATION_S} --mix-duration ${MIX_DURATION_S} --connections ${CONNECTIONS}${args.service ? ` --service ${args.service}` : ''}${SUBSET ? ` --scenarios ${args.scenarios}` : ''}${args['rate-limit'] === '0' ? '' : ` --rate-limit ${args['rate-limit']}`}\`.`,
  '',
]
try {
  for (const dialect of args.dialects.split(',') as Array<'sqlite' | 'postgres'>) {
    const section = await benchDialect(dialect, images)
    if (section) {
      sections.push(...section)
      console.log(section.join('\n'))
    }
  }
} finally {
  await images.close()
}
const name = [LISTINGS === 100_000 ? '' : `${LISTINGS}-listings`, args.service ? 'other-build' : '', SUBSET ? 'subset' : ''].filter(Boolean).join('-')
console.log(`written to ${writeResult(name || undefined, sections.join('\n'))}`)
