/**
 * Webhooks (issue 14) against the service's own baselines in the same run, on SQLite and PostgreSQL:
 *   npm run bench:webhooks                       (100k listings seeded; 10 s per saturated scenario, 60 s at 500/s)
 *   npm run bench:webhooks -- --dialects sqlite --sustain 30
 *
 * - creates of 1 item with no endpoint, then with one enabled endpoint whose receiver answers 200 (target ≥ 90%);
 * - 500 creates/s for --sustain seconds with that endpoint: lag from the event's commit (createdAt) to its
 *   arrival at the receiver, p50/p99 (target p99 < 1 s), and what is still owed at the end (target: nothing);
 * - deliveries/s at saturation: deliveries of the newest 100,000 events owed at once to a second endpoint;
 * - page 1 with 10,000 deliveries owed to a dead endpoint (refusing connections, and one that never answers)
 *   against page 1 with none just before (target: within 10%).
 * Both comparisons alternate their sides --rounds times (2) and compare means: single runs drift too much.
 * On PostgreSQL the queue tables are VACUUM ANALYZEd between phases, as autovacuum (off on this machine) would.
 * The receiver runs in this process (a bare node:http server answering 200 at once).
 */
import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { openDatabase, type Database } from '../src/db/connection.js'
import { createTestDatabase } from '../test/helper.js'
import { startImageServer } from '../test/image-server.js'
import { refusingUrl } from '../test/webhook-receiver.js'
import { loadTool, runLoad, UNIQUE, type LoadResult, type RequestKind } from './load.js'
import { listingBody, machine, startService, writeResult } from './lib.js'
import { seed } from './seed.js'
import { addEndpoint as register, lagFigures, owed, RECEIVER_ENV, removeEndpoint, startReceiver } from './webhook-receiver.js'

const { values: args } = parseArgs({
  options: {
    dialects: { type: 'string', default: 'sqlite,postgres' },
    listings: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '10' },
    sustain: { type: 'string', default: '60' },
    rate: { type: 'string', default: '500' },
    dead: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '2' },
  },
})
const DURATION_S = Number(args.duration)
const SUSTAIN_S = Number(args.sustain)
const RATE = Number(args.rate)
const DEAD = Number(args.dead)
const CONNECTIONS = 50
/** Each comparison alternates its two sides this many times. */
const ROUNDS = Number(args.rounds)

/** A port that accepts connections and never answers: a receiver that hangs. */
async function startBlackHole(): Promise<{ url: string; close: () => void }> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    close() {
      for (const socket of sockets) socket.destroy()
      server.close()
    },
  }
}

/** Owes `count` deliveries of the provider's newest events to `endpointId`, due now: as if they had piled up. */
async function pileUp(database: Database, endpointId: string, count: number): Promise<number> {
  const now = Date.now()
  await sql`insert into webhook_deliveries (id, endpoint_id, event_id, owner_id, event_type, attempts, next_attempt_at_ms, created_at_ms)
    select ${endpointId} || ':' || e.id, ${endpointId}, e.id, e.owner_id, e.type, 0, ${now}, ${now}
    from (select id, owner_id, type from events order by created_at_ms desc limit ${count}) as e`.execute(database.kysely)
  return owed(database, [endpointId])
}

async function benchDialect(dialect: 'sqlite' | 'postgres'): Promise<string[]> {
  const target = await createTestDatabase(dialect)
  const database = openDatabase(target.url)
  const seeded = await seed(database, Number(args.listings))
  if (dialect === 'postgres') await sql`analyze`.execute(database.kysely)
  const images = await startImageServer()
  const receiver = await startReceiver()
  const service = await startService(
    { DATABASE_URL: target.url, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true', ...RECEIVER_ENV, WEBHOOK_TIMEOUT_MS: '10000' },
    seeded.token,
  )
  const auth = { authorization: `Bearer ${service.token}` }
  const json = { ...auth, 'content-type': 'application/json' }
  const create: RequestKind = {
    weight: 1,
    method: 'POST',
    path: '/api/v1/listing/create',
    headers: json,
    body: JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), [undefined])),
  }
  const page1: RequestKind = { weight: 1, method: 'GET', path: '/api/v1/listing?page=1&limit=10', headers: auth }
  const addEndpoint = async (url: string) => (await register(service.baseUrl, service.token, url)).id
  const saturated = async (kind: RequestKind) => {
    await runLoad(service.baseUrl, [kind], { connections: CONNECTIONS, durationS: 2 })
    return runLoad(service.baseUrl, [kind], { connections: CONNECTIONS, durationS: DURATION_S })
  }
  const rows: string[] = []
  const row = (scenario: string, result: LoadResult | undefined, note: string) =>
    rows.push(
      `| ${scenario} | ${result ? Math.round(result.rps).toLocaleString('en-US') : '—'} | ${result ? `${result.p99Ms.toFixed(1)} ms` : '—'} | ${result?.failures ?? '—'} | ${note} |`,
    )
  // This machine's PostgreSQL runs without autovacuum (docs/benchmarks.md), which a deployment's would not: after each
  // phase's hundred thousand deliveries deleted, the queue's indexes would otherwise keep every dead entry, for
  // every later claim to step over. Between phases, what autovacuum would have done by then.
  const vacuum = async () => {
    if (dialect === 'postgres') await sql`vacuum analyze webhook_deliveries, webhook_attempts, webhook_endpoints, events`.execute(database.kysely)
  }
  const settle = async (endpointId: string, maxS: number) => {
    for (let waited = 0; waited < maxS * 10 && (await owed(database, [endpointId])) > 0; waited++) await sleep(100)
    return owed(database, [endpointId])
  }
  const mean = (results: LoadResult[]) => results.reduce((sum, result) => sum + result.rps, 0) / results.length
  // A row of several rounds: their mean throughput, their worst p99, all their failures.
  const summary = (results: LoadResult[]): LoadResult => ({
    ...(results.at(-1) as LoadResult),
    rps: mean(results),
    p99Ms: Math.max(...results.map((result) => result.p99Ms)),
    failures: results.reduce((n, r) => n + r.failures, 0),
  })
  const each = (results: LoadResult[]) => results.map((result) => Math.round(result.rps).toLocaleString('en-US')).join(', ')
  try {
    // Throughput on this machine drifts by more than the 10% the targets allow within minutes, so every
    // comparison alternates its two sides, ROUNDS times each, and compares the means.
    const bare: LoadResult[] = []
    const withEndpoint: LoadResult[] = []
    const behind: number[] = []
    let live = ''
    for (let round = 0; round < ROUNDS; round++) {
      if (live) await removeEndpoint(service.baseUrl, service.token, live)
      bare.push(await saturated(create))
      live = await addEndpoint(receiver.url)
      withEndpoint.push(await saturated(create))
      behind.push(await owed(database, [live]))
      const left = await settle(live, 120)
      if (left > 0) throw new Error(`${left} deliveries still owed 120 s after the creates stopped`)
    }
    row('create, 1 item, no endpoint', summary(bare), `baseline; rounds: ${each(bare)}`)
    row(
      'create, 1 item, one endpoint (receiver 200)',
      summary(withEndpoint),
      `${((100 * mean(withEndpoint)) / mean(bare)).toFixed(1)}% of the baseline (target ≥ 90%); rounds: ${each(withEndpoint)}; ${behind.join(' and ')} deliveries owed when the load stopped, all delivered within 120 s`,
    )

    await vacuum()
    receiver.arrivals.length = 0
    const sustained = await runLoad(service.baseUrl, [create], { connections: CONNECTIONS, durationS: SUSTAIN_S, rate: RATE })
    const owedAtEnd = await owed(database, [live])
    await settle(live, 30)
    const lags = receiver.arrivals.map((arrival) => arrival.lagMs)
    const lag = lagFigures(lags)
    row(
      `create at ${RATE}/s for ${SUSTAIN_S} s, one endpoint`,
      sustained,
      `delivery lag from commit to arrival p50 ${lag.p50} ms, p99 ${lag.p99} ms, max ${lag.max} ms over ${lags.length} deliveries (target p99 < 1 s); ${owedAtEnd} owed when the load stopped`,
    )

    await vacuum()
    const second = await startReceiver()
    const bulk = await addEndpoint(second.url)
    const piled = await pileUp(database, bulk, 100_000)
    const started = performance.now()
    const left = await settle(bulk, 120)
    const seconds = (performance.now() - started) / 1000
    row(
      'deliveries at saturation',
      undefined,
      `${piled} owed at once to a second endpoint: ${Math.round((piled - left) / seconds)} deliveries/s (${piled - left} in ${seconds.toFixed(1)} s)`,
    )
    await second.close()

    await vacuum()
    for (const [name, url, close] of [
      ['refusing connections', await refusingUrl(), () => {}],
      ...(await startBlackHole().then((hole) => [['never answering', hole.url, hole.close]] as const)),
    ] as const) {
      const before: LoadResult[] = []
      const during: LoadResult[] = []
      let pending = 0
      for (let round = 0; round < ROUNDS; round++) {
        before.push(await saturated(page1))
        const dead = await addEndpoint(url)
        pending = await pileUp(database, dead, DEAD)
        during.push(await saturated(page1))
        if ((await owed(database, [dead])) !== pending) throw new Error('the dead endpoint was delivered to')
        await removeEndpoint(service.baseUrl, service.token, dead)
      }
      row(`page 1, limit 10, nothing owed`, summary(before), `baseline of the next row; rounds: ${each(before)}`)
      row(
        `page 1, limit 10, ${pending.toLocaleString('en-US')} owed to an endpoint ${name}`,
        summary(during),
        `${((100 * mean(during)) / mean(before)).toFixed(1)}% of the baseline (target ≥ 90%); rounds: ${each(during)}; all still owed after each`,
      )
      close()
    }
  } finally {
    await service.stop()
    await receiver.close()
    await images.close()
    await database.close()
    await target.drop()
  }
  return [
    `## ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} — ${Number(args.listings).toLocaleString('en-US')} listings seeded`,
    '',
    '| scenario | req/s (mean of rounds) | p99 (worst round) | failures | notes |',
    '|---|---:|---:|---:|---|',
    ...rows,
    '',
  ]
}

const sections = [
  `# Webhook benchmark — ${new Date().toISOString()}`,
  '',
  `Machine: ${machine()}. Load: ${loadTool}, ${CONNECTIONS} connections, ${DURATION_S} s per saturated scenario after 2 s of warm-up; the fixed rate is open loop (bench/open-loop.ts).`,
  `Command: \`npm run bench:webhooks -- --dialects ${args.dialects} --listings ${args.listings} --duration ${DURATION_S} --sustain ${SUSTAIN_S} --rate ${RATE} --dead ${DEAD} --rounds ${ROUNDS}\`. Comparisons alternate their two sides ${ROUNDS} times and compare means.`,
  '',
]
for (const dialect of args.dialects.split(',') as Array<'sqlite' | 'postgres'>) {
  const section = await benchDialect(dialect)
  sections.push(...section)
  console.log(section.join('\n'))
}
console.log(`written to ${writeResult('webhooks', sections.join('\n'))}`)
