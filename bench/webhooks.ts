/**
 * Webhooks (issue 14) against the service's own baselines in the same run, on SQLite and PostgreSQL:
 *   npm run bench:webhooks                       (100k listings seeded; 10 s per saturated scenario, 60 s at 500/s)
 *   npm run bench:webhooks -- --dialects sqlite --sustain 30
 *
 * - creates of 1 item with no endpoint, then with one enabled endpoint whose receiver answers 200 (target ≥ 90%);
 * - 500 creates/s for --sustain seconds with that endpoint: lag from the event's commit (createdAt) to its
 *   arrival at the receiver, p50/p99 (target p99 < 1 s), and what is still owed at the end (target: nothing);
 * - deliveries/s at saturation: deliveries of every event so far owed at once to a second endpoint;
 * - page 1 with 10,000 deliveries owed to a dead endpoint (refusing connections, and one that never answers)
 *   against page 1 with none (target: within 10%).
 * The receiver runs in this process (a bare node:http server answering 200 at once).
 */
import http from 'node:http'
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
import { listingBody, machine, percentile, startService, writeResult } from './lib.js'
import { seed } from './seed.js'

const { values: args } = parseArgs({
  options: {
    dialects: { type: 'string', default: 'sqlite,postgres' },
    listings: { type: 'string', default: '100000' },
    duration: { type: 'string', default: '10' },
    sustain: { type: 'string', default: '60' },
    rate: { type: 'string', default: '500' },
    dead: { type: 'string', default: '10000' },
  },
})
const DURATION_S = Number(args.duration)
const SUSTAIN_S = Number(args.sustain)
const RATE = Number(args.rate)
const DEAD = Number(args.dead)
const CONNECTIONS = 50

interface Receiver {
  url: string
  arrivals: number
  lagsMs: number[]
  close(): void
}

async function startReceiver(): Promise<Receiver> {
  const receiver = {
    url: '',
    arrivals: 0,
    lagsMs: [] as number[],
    close: () => server.close(),
  }
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const arrived = Date.now()
      receiver.arrivals++
      const createdAt = /"createdAt":"([^"]+)"/.exec(Buffer.concat(chunks).toString('utf8'))?.[1]
      if (createdAt) receiver.lagsMs.push(arrived - Date.parse(createdAt))
      response.writeHead(200).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
  return receiver
}

/** A port that accepts connections and never answers: a receiver that hangs. */
async function startBlackHole(): Promise<{ url: string; close(): void }> {
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

const owed = async (database: Database, endpointId?: string) => {
  const query = database.kysely.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number>().as('n'))
  const [row] = await (endpointId ? query.where('endpoint_id', '=', endpointId) : query).execute()
  return Number(row?.n ?? 0)
}

/** Owes `count` deliveries of the provider's newest events to `endpointId`, due now: as if they had piled up. */
async function pileUp(database: Database, endpointId: string, count: number): Promise<number> {
  const now = Date.now()
  await sql`insert into webhook_deliveries (id, endpoint_id, event_id, provider_id, event_type, attempts, next_attempt_at_ms, created_at_ms)
    select ${endpointId} || ':' || e.id, ${endpointId}, e.id, e.provider_id, e.type, 0, ${now}, ${now}
    from (select id, provider_id, type from events order by created_at_ms desc limit ${count}) as e`.execute(database.kysely)
  return owed(database, endpointId)
}

async function benchDialect(dialect: 'sqlite' | 'postgres'): Promise<string[]> {
  const target = await createTestDatabase(dialect)
  const database = openDatabase(target.url)
  const seeded = await seed(database, Number(args.listings))
  if (dialect === 'postgres') await sql`analyze`.execute(database.kysely)
  const images = await startImageServer()
  const receiver = await startReceiver()
  const service = await startService(
    { DATABASE_URL: target.url, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_TIMEOUT_MS: '10000' },
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
  const addEndpoint = async (url: string) => {
    const response = await fetch(`${service.baseUrl}/api/v1/webhooks`, { method: 'POST', headers: json, body: JSON.stringify({ url }) })
    if (response.status !== 201) throw new Error(`webhook create answered ${response.status}: ${await response.text()}`)
    return ((await response.json()) as { id: string }).id
  }
  const saturated = async (kind: RequestKind) => {
    await runLoad(service.baseUrl, [kind], { connections: CONNECTIONS, durationS: 2 })
    return runLoad(service.baseUrl, [kind], { connections: CONNECTIONS, durationS: DURATION_S })
  }
  const rows: string[] = []
  const row = (scenario: string, result: LoadResult | undefined, note: string) =>
    rows.push(`| ${scenario} | ${result ? Math.round(result.rps).toLocaleString('en-US') : '—'} | ${result ? `${result.p99Ms.toFixed(1)} ms` : '—'} | ${result?.failures ?? '—'} | ${note} |`)
  const settle = async (endpointId: string, maxS: number) => {
    for (let waited = 0; waited < maxS * 10 && (await owed(database, endpointId)) > 0; waited++) await sleep(100)
    return owed(database, endpointId)
  }
  try {
    const pageBefore = await saturated(page1)
    row('page 1, limit 10, nothing owed', pageBefore, 'baseline for the dead-endpoint rows')
    const bare = await saturated(create)
    row('create, 1 item, no endpoint', bare, 'baseline')

    const live = await addEndpoint(receiver.url)
    receiver.lagsMs.length = 0
    const withEndpoint = await saturated(create)
    const behind = await owed(database, live)
    row(
      'create, 1 item, one endpoint (receiver 200)',
      withEndpoint,
      `${((100 * withEndpoint.rps) / bare.rps).toFixed(1)}% of the baseline (target ≥ 90%); ${behind} deliveries owed when the load stopped, ${await settle(live, 60)} after up to 60 s`,
    )

    receiver.lagsMs.length = 0
    const sustained = await runLoad(service.baseUrl, [create], { connections: CONNECTIONS, durationS: SUSTAIN_S, rate: RATE })
    const owedAtEnd = await owed(database, live)
    await settle(live, 30)
    const lags = receiver.lagsMs
    row(
      `create at ${RATE}/s for ${SUSTAIN_S} s, one endpoint`,
      sustained,
      `delivery lag from commit to arrival p50 ${percentile(lags, 50)} ms, p99 ${percentile(lags, 99)} ms, max ${Math.max(...lags)} ms over ${lags.length} deliveries (target p99 < 1 s); ${owedAtEnd} owed when the load stopped`,
    )

    const second = await startReceiver()
    const bulk = await addEndpoint(second.url)
    const piled = await pileUp(database, bulk, 1_000_000)
    const started = performance.now()
    const left = await settle(bulk, 120)
    const seconds = (performance.now() - started) / 1000
    row('deliveries at saturation', undefined, `${piled} owed at once to a second endpoint: ${Math.round((piled - left) / seconds)} deliveries/s (${piled - left} in ${seconds.toFixed(1)} s)`)
    second.close()

    for (const [name, url, close] of [
      ['refusing connections', await refusingUrl(), () => {}],
      ...(await startBlackHole().then((hole) => [['never answering', hole.url, hole.close]] as const)),
    ] as const) {
      const dead = await addEndpoint(url)
      const pending = await pileUp(database, dead, DEAD)
      const page = await saturated(page1)
      row(
        `page 1, limit 10, ${pending.toLocaleString('en-US')} owed to an endpoint ${name}`,
        page,
        `${((100 * page.rps) / pageBefore.rps).toFixed(1)}% of the baseline (target ≥ 90%); ${await owed(database, dead)} still owed after`,
      )
      await fetch(`${service.baseUrl}/api/v1/webhooks/${dead}`, { method: 'DELETE', headers: auth })
      close()
    }
  } finally {
    await service.stop()
    receiver.close()
    await images.close()
    await database.close()
    await target.drop()
  }
  return [
    `## ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'} — ${Number(args.listings).toLocaleString('en-US')} listings seeded`,
    '',
    '| scenario | req/s | p99 | failures | notes |',
    '|---|---:|---:|---:|---|',
    ...rows,
    '',
  ]
}

const sections = [
  `# Webhook benchmark — ${new Date().toISOString()}`,
  '',
  `Machine: ${machine()}. Load: ${loadTool}, ${CONNECTIONS} connections, ${DURATION_S} s per saturated scenario after 2 s of warm-up; the fixed rate is open loop (bench/open-loop.ts).`,
  `Command: \`npm run bench:webhooks -- --dialects ${args.dialects} --listings ${args.listings} --duration ${DURATION_S} --sustain ${SUSTAIN_S} --rate ${RATE} --dead ${DEAD}\`.`,
  '',
]
for (const dialect of (args.dialects ?? '').split(',') as Array<'sqlite' | 'postgres'>) {
  const section = await benchDialect(dialect)
  sections.push(...section)
  console.log(section.join('\n'))
}
console.log(`written to ${writeResult('webhooks', sections.join('\n'))}`)
