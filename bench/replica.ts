/**
 * Issue 27: reads from a standby add no 5xx and keep p99. A primary and a hot standby of the bench's own
 * (test/standby-support.ts: pg_createcluster on free ports, pg_basebackup -R), one provider seeded on the primary,
 * then two services of this build on the same database: `primary only`, and `with DATABASE_READ_URL` (the
 * provider's reads on the standby while it has replayed the provider's writes, else the primary). Each is loaded
 * with the same mix, rounds alternating: random pages, the feed from its start, and 1-item creates, so the
 * creates keep moving the provider's position and the reads keep checking it. Reports req/s, p99, failures (any
 * non-2xx answer) and how the replica reads went (listing_replica_reads_total).
 *
 *   npx tsx bench/replica.ts --listings 10000 --duration 8 --rounds 3
 */
import { parseArgs } from 'node:util'
import { openDatabase } from '../src/db/connection.js'
import { startImageServer } from '../test/image-server.js'
import { standbyUnavailable, startPrimaryAndStandby } from '../test/standby-support.js'
import { runLoad, UNIQUE, type LoadResult, type RequestKind } from './load.js'
import { cleanUpOnSignals, cpuSeconds, listingBody, machine, processCpu, startService, writeResult, type RunningService } from './lib.js'
import { seed } from './seed.js'

const { values: args } = parseArgs({
  options: {
    listings: { type: 'string', default: '10000' },
    duration: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
  },
})
const ROUNDS = Number(args.rounds)
const why = standbyUnavailable()
if (why) throw new Error(`no standby on this machine: ${why}`)

const cleanups = cleanUpOnSignals('stopping the services and removing the clusters')
const images = await startImageServer()
cleanups.add(() => images.close())
const clusters = await startPrimaryAndStandby()
cleanups.add(() => clusters.remove())
const started = new Date().toISOString()

try {
  const name = 'listing_bench'
  await clusters.query('primary', `create database ${name}`)
  const database = openDatabase(clusters.primaryUrl(name))
  const seeded = await seed(database, Number(args.listings)) // ANALYZEs at the end
  await database.close()
  await clusters.caughtUp(60_000)

  const env = { DATABASE_URL: clusters.primaryUrl(name), IMAGE_ALLOW_PRIVATE_NETWORKS: 'true' }
  const services: Array<{ name: string; service: RunningService }> = [
    { name: 'primary only', service: await startService(env, seeded.token) },
    { name: 'with DATABASE_READ_URL (standby)', service: await startService({ ...env, DATABASE_READ_URL: clusters.standbyUrl(name) }, seeded.token) },
  ]
  for (const { service } of services) cleanups.add(() => service.stop())

  const auth = { authorization: `Bearer ${seeded.token}` }
  const pages = Math.ceil(Number(args.listings) / 10)
  const mix: RequestKind[] = [
    ...Array.from({ length: 40 }, (_, i) => ({
      weight: 2,
      method: 'GET' as const,
      path: `/api/v1/listing?page=${1 + Math.floor((i * pages) / 40)}&limit=10`,
      headers: auth,
    })),
    { weight: 10, method: 'GET', path: '/api/v1/listing?page=1&limit=10', headers: auth },
    { weight: 10, method: 'GET', path: '/api/v1/events?limit=10', headers: auth },
    {
      weight: 10,
      method: 'POST',
      path: '/api/v1/listing/create',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), [undefined])),
    },
  ]

  /** listing_replica_reads_total by outcome, from the service's /metrics. */
  async function replicaReads(service: RunningService): Promise<Record<string, number>> {
    const text = await (await fetch(`${service.baseUrl}/metrics`)).text()
    const counts: Record<string, number> = {}
    for (const [, outcome, value] of text.matchAll(/^listing_replica_reads_total\{outcome="([^"]+)"\} (\S+)$/gm)) counts[outcome as string] = Number(value)
    return counts
  }

  /** CPU seconds so far: the service's process, and every process of each cluster (backends, replay, WAL sending). */
  const cpu = (service: RunningService) => ({
    service: cpuSeconds(service.child.pid as number),
    primary: processCpu(`${clusters.names.primary}:`),
    standby: processCpu(`${clusters.names.standby}:`),
  })
  const spent = (before: Map<string, number>, after: Map<string, number>) =>
    [...after].reduce((sum, [pid, seconds]) => sum + seconds - (before.get(pid) ?? 0), 0)

  interface Turn {
    result: LoadResult
    /** Milliseconds of CPU per request. */
    serviceMs: number
    primaryMs: number
    standbyMs: number
  }
  const results = new Map<string, Turn[]>()
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < services.length; i++) {
      const { name: label, service } = services[(i + round) % services.length] as (typeof services)[number]
      await runLoad(service.baseUrl, mix, { connections: Number(args.connections), durationS: 1 })
      const before = cpu(service)
      const result = await runLoad(service.baseUrl, mix, { connections: Number(args.connections), durationS: Number(args.duration) })
      const after = cpu(service)
      const perRequest = (seconds: number) => (1000 * seconds) / result.requests
      const turn = {
        result,
        serviceMs: perRequest(after.service - before.service),
        primaryMs: perRequest(spent(before.primary, after.primary)),
        standbyMs: perRequest(spent(before.standby, after.standby)),
      }
      results.set(label, [...(results.get(label) ?? []), turn])
      console.error(
        `round ${round + 1}, ${label}: ${Math.round(result.rps)} req/s, p99 ${result.p99Ms.toFixed(1)} ms, ${result.failures} failures; CPU/request service ${turn.serviceMs.toFixed(3)} ms, primary ${turn.primaryMs.toFixed(3)} ms, standby ${turn.standbyMs.toFixed(3)} ms`,
      )
    }
  }
  const reads = await replicaReads(services[1]?.service as RunningService)

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  const lines = [
    `# Reads from a standby under mixed load — ${started}`,
    '',
    `Machine: ${machine()}. A primary and a hot standby of the bench's own (pg_createcluster, pg_basebackup -R, fsync off) on this machine; ${Number(args.listings).toLocaleString('en-US')} listings of one provider. Load: ${args.connections} connections, ${args.duration} s per turn after 1 s of warm-up, ${ROUNDS} rounds, the order alternating. Mix by weight: pages spread over all pages 80, page 1 10, the feed from its start 10, 1-item creates 10.`,
    `Command: \`npx tsx bench/replica.ts --listings ${args.listings} --duration ${args.duration} --rounds ${ROUNDS} --connections ${args.connections}\`.`,
    '',
    '| service | req/s per round | median req/s | p99 per round | worst p99 | failures (non-2xx) | CPU/request: service | primary | standby |',
    '|---|---|---:|---|---:|---:|---:|---:|---:|',
    ...services.map(({ name: label }) => {
      const turns = results.get(label) ?? []
      const runs = turns.map((turn) => turn.result)
      const cpuMs = (of: (turn: Turn) => number) => `${median(turns.map(of)).toFixed(3)} ms`
      return `| ${label} | ${runs.map((r) => Math.round(r.rps).toLocaleString('en-US')).join(', ')} | ${Math.round(median(runs.map((r) => r.rps))).toLocaleString('en-US')} | ${runs.map((r) => `${r.p99Ms.toFixed(1)} ms`).join(', ')} | ${Math.max(...runs.map((r) => r.p99Ms)).toFixed(1)} ms | ${runs.reduce((n, r) => n + r.failures, 0)} | ${cpuMs((t) => t.serviceMs)} | ${cpuMs((t) => t.primaryMs)} | ${cpuMs((t) => t.standbyMs)} |`
    }),
    '',
    `Reads of the second service, by outcome (listing_replica_reads_total, whole run): ${
      Object.entries(reads)
        .map(([outcome, n]) => `${outcome} ${n.toLocaleString('en-US')}`)
        .join(', ') || 'none counted'
    }.`,
    '',
  ]
  console.log(lines.join('\n'))
  console.log(`written to ${writeResult('replica', lines.join('\n'))}`)
} finally {
  await cleanups.run()
}
