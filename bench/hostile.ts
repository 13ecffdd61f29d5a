/**
 * What issue 25's attacks do to everyone else: the service runs from a built dist/, and for ~10 s a victim (another
 * provider, or a marketplace for discovery) sends ordinary requests one after another on a keep-alive connection,
 * a probe asks /healthz every 50 ms, and an attacker sends one of the scenarios below. Reported: the victim's
 * latency and 5xx, the worst /healthz, and what the attacker got. With two dists the rounds alternate A, B, A, B…
 * on a fresh database each, so a slower moment of the machine is shared.
 *
 *   npx tsx bench/hostile.ts --dist /work/dist-base --dist dist --db sqlite --scenario etag [--scenario …] [--rounds 2] [--seconds 10]
 *
 * Scenarios: etag, accept-encoding, nested-json, flat-json, image-starvation, forged-cursors (or `all`). PostgreSQL:
 * --db postgres creates a database per round on BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres)
 * and drops it after. Every loop is bounded in count and time; only 127.0.0.1 is contacted.
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs, promisify } from 'node:util'
import pg from 'pg'
import { Agent, fetch, type RequestInit } from 'undici'
import { startImageServer, type ImageServer } from '../test/image-server.js'
import { listingBody, machine, percentile, ROOT, startService } from './lib.js'

const SCENARIOS = ['etag', 'accept-encoding', 'nested-json', 'flat-json', 'image-starvation', 'forged-cursors'] as const
type Scenario = (typeof SCENARIOS)[number]

const { values: args } = parseArgs({
  options: {
    dist: { type: 'string', multiple: true },
    db: { type: 'string', default: 'sqlite' },
    scenario: { type: 'string', multiple: true },
    rounds: { type: 'string', default: '1' },
    seconds: { type: 'string', default: '10' },
  },
})
const dists = (args.dist ?? ['dist']).map((dist) => resolve(dist))
const temporary: string[] = []

/**
 * A dist/ that can run: one outside this checkout (e.g. /work/dist-base) has no node_modules above it, so it is
 * copied into a temporary folder beside a link to ours and a copy of package.json (openapi.ts reads its version).
 */
function runnable(dist: string): string {
  if (dist.startsWith(ROOT)) return dist
  const dir = mkdtempSync(join(tmpdir(), 'listing-hostile-dist-'))
  temporary.push(dir)
  cpSync(dist, join(dir, 'dist'), { recursive: true })
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'))
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  return join(dir, 'dist')
}
const runnableDists = dists.map(runnable)
const scenarios: Scenario[] = (args.scenario ?? ['all']).flatMap((name) => (name === 'all' ? [...SCENARIOS] : [name as Scenario]))
for (const scenario of scenarios) if (!SCENARIOS.includes(scenario)) throw new Error(`unknown scenario ${scenario}; one of ${SCENARIOS.join(', ')}`)
if (args.db !== 'sqlite' && args.db !== 'postgres') throw new Error('--db is sqlite or postgres')
const DB = args.db
const ROUNDS = Number(args.rounds)
const DURATION_MS = Number(args.seconds) * 1000
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
// Every request is given up this long after the round's duration is over (what it got then is "none"), so an
// attacker's create waiting on an image that never comes cannot hold the run.
const GRACE_MS = 3000
let roundDeadline = Infinity
// Outside a round (seeding) a request is given up after this long.
const REQUEST_TIMEOUT_MS = 60_000
// The victim's and the probe's loops stop after this many requests whatever the time.
const MAX_REQUESTS = 100_000

// ---- a database and the service on it ------------------------------------------------------------------------

interface Database {
  url: string
  drop(): Promise<void>
}

async function freshDatabase(): Promise<Database> {
  if (DB === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'listing-hostile-'))
    return { url: `sqlite:${join(dir, 'bench.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  const name = `listing_hostile_${randomBytes(5).toString('hex')}`
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: POSTGRES_URL })
    await client.connect()
    try {
      await client.query(sql)
    } finally {
      await client.end()
    }
  }
  await admin(`create database ${name}`)
  const url = new URL(POSTGRES_URL)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) }
}

/** `node <dist>/cli/main.js <args…>` on the database: a provider's or a marketplace's token. */
async function cliToken(dist: string, databaseUrl: string, ...cliArgs: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [join(dist, 'cli/main.js'), ...cliArgs], {
    env: { PATH: process.env.PATH, DATABASE_URL: databaseUrl },
  })
  return (JSON.parse(stdout) as { token: string }).token
}

// ---- requests -----------------------------------------------------------------------------------------------

interface Sample {
  ms: number
  status: number // 0: no answer (connection error or timeout)
}

/** One keep-alive connection per loop, as a client library would hold. */
function connection() {
  return new Agent({ connections: 1, pipelining: 1, keepAliveTimeout: 30_000 })
}

async function timed(url: string, init: RequestInit): Promise<Sample & { text: string }> {
  const started = performance.now()
  try {
    const response = await fetch(url, {
      ...init,
      signal: AbortSignal.timeout(Math.max(1, Math.min(REQUEST_TIMEOUT_MS, roundDeadline + GRACE_MS - Date.now()))),
    })
    const text = await response.text()
    return { ms: performance.now() - started, status: response.status, text }
  } catch {
    return { ms: performance.now() - started, status: 0, text: '' }
  }
}

/** `send` one after another until the deadline (or MAX_REQUESTS), `pauseMs` apart. */
async function closedLoop(deadline: number, send: (i: number) => Promise<Sample>, pauseMs = 0): Promise<Sample[]> {
  const samples: Sample[] = []
  for (let i = 0; Date.now() < deadline && i < MAX_REQUESTS; i += 1) {
    samples.push(await send(i))
    if (pauseMs > 0) await sleep(pauseMs)
  }
  return samples
}

/** `count` requests spread evenly over the duration, each sent when due whatever earlier ones are doing. */
async function openLoop(start: number, count: number, send: (i: number) => Promise<Sample>): Promise<Sample[]> {
  const sent: Array<Promise<Sample>> = []
  for (let i = 0; i < count; i += 1) {
    const due = start + (i * DURATION_MS) / count
    if (due > Date.now()) await sleep(due - Date.now())
    sent.push(send(i))
  }
  return Promise.all(sent)
}

// ---- scenarios ----------------------------------------------------------------------------------------------

interface Setup {
  baseUrl: string
  attacker: string
  victim: string
  images: ImageServer
  /** A listing of the attacker's, for requests that name one. */
  attackerListing: string
  /** Marketplace tokens (forged-cursors only). */
  marketplaces?: { attacker: string; victim: string }
}

interface Attack {
  /** The victim's request, sent in a closed loop. */
  victim(i: number, agent: Agent): Promise<Sample>
  /** The attacker's whole run; resolves with its samples when the duration is over. */
  attack(start: number, deadline: number): Promise<Sample[]>
}

const IMAGE_WORKERS = 35
// Attacks per second of the open-loop scenarios: the rates the security probe used.
const RATES = { etag: 1.2, 'accept-encoding': 30, 'nested-json': 0.7, 'flat-json': 0.7 }
const perRun = (rate: number) => Math.round((rate * DURATION_MS) / 1000)
const ETAG_VALUE = `,${' '.repeat(16_000)}x`
const ACCEPT_ENCODING_VALUE = 'gzip;q=0.5, '.repeat(1250)
const NESTED_BODY_HALF = 512 * 1024 - 32

/** What each attacker and its victim do, for the tables. */
const DESCRIPTIONS: Record<Scenario, { attack: string; victim: string }> = {
  etag: { attack: `${RATES.etag}/s GETs of a listing with If-None-Match: "," + 16,000 spaces + "x", open loop`, victim: 'pages' },
  'accept-encoding': {
    attack: `${RATES['accept-encoding']}/s page GETs with a ${ACCEPT_ENCODING_VALUE.length}-byte Accept-Encoding, open loop`,
    victim: 'pages',
  },
  'nested-json': { attack: `${RATES['nested-json']}/s creates of a 1 MiB body of nested arrays, open loop`, victim: 'pages' },
  'flat-json': { attack: `${RATES['flat-json']}/s creates of a 1 MiB body of empty objects [{},{},…], open loop`, victim: 'pages' },
  'image-starvation': {
    attack: `${IMAGE_WORKERS} concurrent creates, each naming 16 images on a server that never answers, each re-sent as it ends`,
    victim: 'one-image creates (each image a new URL that the image server answers at once)',
  },
  'forged-cursors': {
    attack: '4 concurrent loops of discovery pages (both sorts) whose cursor is a real one re-encoded with a fractional or out-of-range key',
    victim: 'discovery pages (limit 2, each sort in turn) with another marketplace’s token',
  },
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const JSON_TYPE = { 'content-type': 'application/json' }

function victimPages(setup: Setup): Attack['victim'] {
  return (i, agent) => timed(`${setup.baseUrl}/api/v1/listing?limit=10&page=${1 + (i % 3)}`, { headers: bearer(setup.victim), dispatcher: agent })
}

// Both sorts: a cursor's key is a distance in metres for one, an expiresAtUnix for the other.
const DISCOVER = ['latitude=24.7136&longitude=46.6753&radiusKm=5&limit=2', 'latitude=24.7136&longitude=46.6753&radiusKm=5&limit=2&sort=ending_soon']

function attackFor(scenario: Scenario, setup: Setup): Attack {
  const { baseUrl, attacker } = setup
  switch (scenario) {
    case 'etag':
      return {
        victim: victimPages(setup),
        attack: (start) =>
          openLoop(start, perRun(RATES.etag), () =>
            timed(`${baseUrl}/api/v1/listing/${setup.attackerListing}`, { headers: { ...bearer(attacker), 'if-none-match': ETAG_VALUE } }),
          ),
      }
    case 'accept-encoding':
      return {
        victim: victimPages(setup),
        attack: (start) =>
          openLoop(start, perRun(RATES['accept-encoding']), () =>
            timed(`${baseUrl}/api/v1/listing?limit=10`, { headers: { ...bearer(attacker), 'accept-encoding': ACCEPT_ENCODING_VALUE } }),
          ),
      }
    case 'nested-json': {
      const body = `${'['.repeat(NESTED_BODY_HALF)}${']'.repeat(NESTED_BODY_HALF)}`
      return {
        victim: victimPages(setup),
        attack: (start) =>
          openLoop(start, perRun(RATES['nested-json']), () =>
            timed(`${baseUrl}/api/v1/listing/create`, { method: 'POST', headers: { ...bearer(attacker), ...JSON_TYPE }, body }),
          ),
      }
    }
    case 'flat-json': {
      const count = Math.floor((2 * NESTED_BODY_HALF) / 3)
      const body = `[${'{},'.repeat(count - 1)}{}]`
      return {
        victim: victimPages(setup),
        attack: (start) =>
          openLoop(start, perRun(RATES['flat-json']), () =>
            timed(`${baseUrl}/api/v1/listing/create`, { method: 'POST', headers: { ...bearer(attacker), ...JSON_TYPE }, body }),
          ),
      }
    }
    case 'image-starvation':
      return {
        victim: (i, agent) => {
          const body = listingBody(
            `victim-${i}-${randomBytes(4).toString('hex')}`,
            setup.images.url(`/img/victim-${i}-${randomBytes(4).toString('hex')}.png`),
            [undefined],
          )
          return timed(`${baseUrl}/api/v1/listing/create`, {
            method: 'POST',
            headers: { ...bearer(setup.victim), ...JSON_TYPE },
            body: JSON.stringify(body),
            dispatcher: agent,
          })
        },
        attack: async (_start, deadline) => {
          let n = 0
          const worker = () =>
            closedLoop(deadline, () => {
              const tag = `${n++}-${randomBytes(4).toString('hex')}`
              const urls = Array.from({ length: 15 }, (_, k) => setup.images.url(`/hang/${tag}-${k}.png`))
              const body = listingBody(`attack-${tag}`, setup.images.url(`/hang/${tag}-brand.png`), urls)
              return timed(`${baseUrl}/api/v1/listing/create`, { method: 'POST', headers: { ...bearer(attacker), ...JSON_TYPE }, body: JSON.stringify(body) })
            })
          return (await Promise.all(Array.from({ length: IMAGE_WORKERS }, worker))).flat()
        },
      }
    case 'forged-cursors': {
      const marketplaces = setup.marketplaces as { attacker: string; victim: string }
      return {
        victim: (i, agent) => timed(`${baseUrl}/api/v1/discover?${DISCOVER[i % DISCOVER.length]}`, { headers: bearer(marketplaces.victim), dispatcher: agent }),
        attack: async (_start, deadline) => {
          // For each sort, a real cursor of the attacker's own first page, re-encoded with other keys: the same
          // query (its fingerprint q is kept), a key that is fractional, or past any distance or time.
          const forged: string[] = []
          for (const query of DISCOVER) {
            const first = await timed(`${baseUrl}/api/v1/discover?${query}`, { headers: bearer(marketplaces.attacker) })
            const real = (JSON.parse(first.text) as { nextCursor: string | null }).nextCursor
            if (!real) throw new Error(`no nextCursor to forge from: ${first.status} ${first.text.slice(0, 200)}`)
            // Unsigned before 2026-11-25 (base64url JSON), signed since (that, a dot, a MAC): the MAC, if any, is kept.
            const [payload, mac] = real.split('.') as [string, string | undefined]
            const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { q: string; k: number; id: string }
            for (const k of [decoded.k + 0.5, 1e300, Number.MAX_SAFE_INTEGER + 2, 2 ** 63 + 1, 0.000001]) {
              const rekeyed = Buffer.from(JSON.stringify({ ...decoded, k })).toString('base64url')
              forged.push(`${query}&cursor=${mac === undefined ? rekeyed : `${rekeyed}.${mac}`}`)
            }
          }
          const loop = () =>
            closedLoop(deadline, (i) => timed(`${baseUrl}/api/v1/discover?${forged[i % forged.length]}`, { headers: bearer(marketplaces.attacker) }))
          return (await Promise.all([loop(), loop(), loop(), loop()])).flat()
        },
      }
    }
  }
}

// ---- one round ------------------------------------------------------------------------------------------------

interface Row {
  scenario: Scenario
  dist: string
  round: number
  victim: Sample[]
  health: Sample[]
  attack: Sample[]
}

async function round(scenario: Scenario, dist: string, roundNumber: number, images: ImageServer): Promise<Row> {
  const database = await freshDatabase()
  try {
    const attacker = await cliToken(dist, database.url, 'provider', 'create', '--name', 'attacker')
    const victim = await cliToken(dist, database.url, 'provider', 'create', '--name', 'victim')
    const marketplaces =
      scenario === 'forged-cursors'
        ? {
            attacker: await cliToken(dist, database.url, 'marketplace', 'create', '--name', 'attacker market'),
            victim: await cliToken(dist, database.url, 'marketplace', 'create', '--name', 'victim market'),
          }
        : undefined
    const service = await startService({ DATABASE_URL: database.url, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true' }, victim, dist)
    try {
      // Both providers own 30 listings (three pages of 10): something to page through and to discover.
      let attackerListing = ''
      for (const [token, who] of [
        [attacker, 'a'],
        [victim, 'v'],
      ] as const) {
        for (let i = 0; i < 30; i += 1) {
          const body = listingBody(`${who}-seed-${i}`, images.url('/img/seed.png'), [images.url('/img/seed.png'), undefined])
          const created = await timed(`${service.baseUrl}/api/v1/listing/create`, {
            method: 'POST',
            headers: { ...bearer(token), ...JSON_TYPE },
            body: JSON.stringify(body),
          })
          if (created.status !== 201) throw new Error(`seeding: ${created.status} ${created.text.slice(0, 300)}`)
          attackerListing = (JSON.parse(created.text) as { listingId: string }).listingId
        }
      }
      const setup: Setup = { baseUrl: service.baseUrl, attacker, victim, images, attackerListing, marketplaces }
      const attack = attackFor(scenario, setup)
      const start = Date.now()
      const deadline = start + DURATION_MS
      roundDeadline = deadline
      const victimAgent = connection()
      const healthAgent = connection()
      const [victimSamples, health, attackSamples] = await Promise.all([
        closedLoop(deadline, (i) => attack.victim(i, victimAgent)),
        closedLoop(deadline, () => timed(`${service.baseUrl}/healthz`, { dispatcher: healthAgent }), 50),
        attack.attack(start, deadline),
      ])
      roundDeadline = Infinity
      await Promise.all([victimAgent.close(), healthAgent.close()])
      return { scenario, dist, round: roundNumber, victim: victimSamples, health, attack: attackSamples }
    } finally {
      await service.stop()
    }
  } finally {
    await database.drop()
  }
}

// ---- report -----------------------------------------------------------------------------------------------------

const ms = (value: number) => (Number.isNaN(value) ? '–' : value >= 100 ? `${value.toFixed(0)} ms` : `${value.toFixed(1)} ms`)

function statuses(samples: Sample[]): string {
  const counts = new Map<number, number>()
  for (const sample of samples) counts.set(sample.status, (counts.get(sample.status) ?? 0) + 1)
  return [...counts]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${count}×${status === 0 ? 'none' : status}`)
    .join(' ')
}

function tableRow(row: Row, label: string): string {
  const times = row.victim.map((sample) => sample.ms)
  const fiveHundreds = row.victim.filter((sample) => sample.status >= 500).length
  const unanswered = row.victim.filter((sample) => sample.status === 0).length
  const attackTimes = row.attack.map((sample) => sample.ms)
  return `| ${label} | ${row.round} | ${row.victim.length} | ${ms(percentile(times, 50))} | ${ms(percentile(times, 99))} | ${ms(Math.max(...times))} | ${fiveHundreds} | ${unanswered} | ${ms(Math.max(...row.health.map((sample) => sample.ms)))} | ${row.attack.length}: ${statuses(row.attack)}, p50 ${ms(percentile(attackTimes, 50))} |`
}

const images = await startImageServer()
const labels = dists.map((dist, i) => `${String.fromCharCode(65 + i)} (${dist})`)
const lines: string[] = [
  `Machine: ${machine()}. ${new Date().toISOString()}.`,
  `Command: \`npx tsx bench/hostile.ts ${dists.map((dist) => `--dist ${dist}`).join(' ')} --db ${DB} ${scenarios.map((s) => `--scenario ${s}`).join(' ')} --rounds ${ROUNDS} --seconds ${DURATION_MS / 1000}\``,
  '',
]
try {
  for (const scenario of scenarios) {
    const rows: string[] = []
    for (let r = 1; r <= ROUNDS; r += 1) {
      for (const [i, dist] of runnableDists.entries()) {
        const row = await round(scenario, dist, r, images)
        rows.push(tableRow(row, labels[i] as string))
        console.error(`${scenario} ${labels[i]} round ${r}: ${rows.at(-1)}`)
      }
    }
    lines.push(
      `### ${scenario} on ${DB === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
      '',
      `Attack: ${DESCRIPTIONS[scenario].attack}. Victim: ${DESCRIPTIONS[scenario].victim === 'pages' ? 'pages 1–3 of its own listings (limit 10)' : DESCRIPTIONS[scenario].victim}, one after another on one keep-alive connection.`,
      '',
      '| build | round | victim requests | p50 | p99 | max | victim 5xx | victim unanswered | worst /healthz | attacker got |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
      ...rows,
      '',
    )
  }
} finally {
  await images.close()
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true })
}
console.log(lines.join('\n'))
