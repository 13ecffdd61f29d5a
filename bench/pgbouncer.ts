/**
 * Issue 27: what transaction pooling costs. One seeded PostgreSQL database, three services on it, measured in
 * turns within one run (the order rotates each round, so a drift of the machine falls on all of them):
 *
 * - `base`: another build (--base, e.g. a worktree of main) straight to PostgreSQL: today's named statements;
 * - `direct`: this build straight to PostgreSQL: unnamed statements, no session state;
 * - `pgbouncer`: this build through a PgBouncer in transaction mode (test/pgbouncer-support.ts).
 *
 * Scenarios: pages (limit 10) and 1-item creates, each saturated with wrk for --duration seconds after a
 * 1 s warm-up. Besides req/s (which a busy shared machine moves by a lot), each turn records the CPU time per
 * request of the service's process, of the PostgreSQL backends serving this database (the other databases' are
 * not counted) and of PgBouncer: what a request costs, whatever else runs. Needs /usr/sbin/pgbouncer, or
 * PGBOUNCER_BIN: one of 1.21 or later keeps prepared statements, and the service is told so (DATABASE_POOLER_PREPARES).
 *
 * Then the page statement alone, with pgbench, in its three ways of sending it, alternating: `prepared` (named,
 * planned once per connection: what the base build does), `extended` (unnamed, parsed and planned every time:
 * what this build does), and `extended` through the PgBouncer.
 *
 *   npx tsx bench/pgbouncer.ts --base /work/base/dist --listings 10000 --duration 5 --rounds 3
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { openDatabase } from '../src/db/connection.js'
import { createTestDatabase } from '../test/helper.js'
import { startImageServer } from '../test/image-server.js'
import { startPgBouncer } from '../test/pgbouncer-support.js'
import { loadTool, runLoad, UNIQUE, type LoadResult, type RequestKind } from './load.js'
import { cpuSeconds, listingBody, processCpu, machine, startService, writeResult, type RunningService } from './lib.js'
import { seed } from './seed.js'

const { values: args } = parseArgs({
  options: {
    base: { type: 'string' },
    listings: { type: 'string', default: '10000' },
    duration: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    'pgbench-seconds': { type: 'string', default: '5' },
  },
})
const DURATION_S = Number(args.duration)
const ROUNDS = Number(args.rounds)
const CONNECTIONS = Number(args.connections)

/**
 * The page query exactly as the service sends it (listings/repository.ts), page chosen at random, with pgbench
 * in `prepared` and `extended` mode, 4 clients, alternating for ROUNDS rounds.
 */
function pgbenchSection(url: string, providerId: string): string[] {
  const script = join(mkdtempSync(join(tmpdir(), 'listing-pgbench-')), 'page.sql')
  writeFileSync(
    script,
    [
      '\\set page random(1, 1000)',
      'select "p"."listing_count", "l"."id", "l"."reference_id", "l"."expires_at_unix", "l"."withdrawn_at_ms", "l"."sold_out", "l"."brand_name_ar", "l"."brand_name_en", "l"."items_record" from "providers" as "p" left join "listings" as "l" on "l"."provider_id" = "p"."id" and "l"."seq" > "p"."listing_count" - :page * 10 and "l"."seq" <= "p"."listing_count" - (:page - 1) * 10 where "p"."id" = :pid order by "l"."seq" desc;',
      '',
    ].join('\n'),
  )
  const seconds = args['pgbench-seconds']
  const run = (target: string, mode: string) => {
    const u = new URL(target)
    const out = execFileSync(
      'pgbench',
      [
        '-h',
        u.hostname,
        '-p',
        u.port || '5432',
        '-U',
        decodeURIComponent(u.username),
        '-n',
        '-M',
        mode,
        '-c',
        '4',
        '-j',
        '2',
        '-T',
        seconds,
        '-D',
        `pid=${providerId}`,
        '-f',
        script,
        u.pathname.slice(1),
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    )
    return Number(/tps = ([\d.]+)/.exec(out)?.[1] ?? NaN)
  }
  const ways = [
    { name: 'prepared (named), direct', target: url, mode: 'prepared' },
    { name: 'extended (unnamed), direct', target: url, mode: 'extended' },
    { name: 'extended (unnamed), through PgBouncer', target: bouncer.via(url), mode: 'extended' },
  ]
  const tps = new Map<string, number[]>()
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < ways.length; i++) {
      const way = ways[(i + round) % ways.length] as (typeof ways)[number]
      const value = run(way.target, way.mode)
      tps.set(way.name, [...(tps.get(way.name) ?? []), value])
      console.error(`pgbench round ${round + 1}, ${way.name}: ${value.toFixed(0)} tps`)
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  const first = median(tps.get(ways[0]?.name as string) ?? [])
  return [
    `The page statement alone: \`pgbench -n -M <mode> -c 4 -j 2 -T ${seconds}\`, page 1–1000 at random, ${ROUNDS} rounds alternating.`,
    '',
    '| way | tps per round | median | vs named |',
    '|---|---|---:|---:|',
    ...ways.map(({ name }) => {
      const runs = tps.get(name) ?? []
      return `| ${name} | ${runs.map((v) => v.toFixed(0)).join(', ')} | ${median(runs).toFixed(0)} | ${(((median(runs) - first) / first) * 100).toFixed(1)}% |`
    }),
  ]
}

interface Turn {
  result: LoadResult
  /** Milliseconds of CPU per request. */
  serviceMs: number
  postgresMs: number
  bouncerMs: number
}

const images = await startImageServer()
const bouncer = await startPgBouncer({ poolMode: 'transaction', poolSize: 20 })
const fresh = await createTestDatabase('postgres')
const services: Array<{ name: string; service: RunningService }> = []
try {
  const database = openDatabase(fresh.url)
  const seeded = await seed(database, Number(args.listings)) // ANALYZEs at the end
  await database.close()

  const env = { IMAGE_ALLOW_PRIVATE_NETWORKS: 'true' }
  if (args.base)
    services.push({ name: 'base (named statements, direct)', service: await startService({ ...env, DATABASE_URL: fresh.url }, seeded.token, args.base) })
  services.push({ name: 'this build, direct', service: await startService({ ...env, DATABASE_URL: fresh.url }, seeded.token) })
  services.push({
    name: `this build, through PgBouncer (transaction mode${bouncer.keepsPrepared ? ', keeping prepared statements' : ''})`,
    service: await startService({ ...env, DATABASE_URL: bouncer.via(fresh.url), DATABASE_POOLER_PREPARES: String(bouncer.keepsPrepared) }, seeded.token),
  })

  const auth = { authorization: `Bearer ${seeded.token}` }
  // Pages 1–200 at random besides page 1: identical reads in flight share one query (listings/repository.ts),
  // which hides most of page 1's queries, and every page costs what page 1 does (docs/design/0001-pages-by-sequence.md).
  const pages: RequestKind[] = Array.from({ length: 200 }, (_, i) => ({
    weight: 1,
    method: 'GET',
    path: `/api/v1/listing?page=${i + 1}&limit=10`,
    headers: auth,
  }))
  const scenarios: Array<{ name: string; kinds: RequestKind[] }> = [
    // Issue 27's target: page 1 asked by every connection at once, as a marketplace's many pollers do.
    { name: 'page 1, limit 10, every connection', kinds: [{ weight: 1, method: 'GET', path: '/api/v1/listing?page=1&limit=10', headers: auth }] },
    { name: 'pages 1–200 at random, limit 10', kinds: pages },
    {
      name: 'create, 1 item',
      kinds: [
        {
          weight: 1,
          method: 'POST',
          path: '/api/v1/listing/create',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), [undefined])),
        },
      ],
    },
  ]
  const databaseName = new URL(fresh.url).pathname.slice(1)
  const results = new Map<string, Turn[]>()
  for (let round = 0; round < ROUNDS; round++) {
    for (const scenario of scenarios) {
      for (let i = 0; i < services.length; i++) {
        const { name, service } = services[(i + round) % services.length] as (typeof services)[number]
        await runLoad(service.baseUrl, scenario.kinds, { connections: CONNECTIONS, durationS: 1 })
        const pid = service.child.pid as number
        const before = { service: cpuSeconds(pid), backends: processCpu(` ${databaseName} `), bouncer: cpuSeconds(bouncer.pid) }
        const result = await runLoad(service.baseUrl, scenario.kinds, { connections: CONNECTIONS, durationS: DURATION_S })
        const backendsAfter = processCpu(` ${databaseName} `)
        let postgres = 0
        for (const [backend, seconds] of backendsAfter) postgres += seconds - (before.backends.get(backend) ?? 0)
        const perRequest = (seconds: number) => (seconds * 1000) / result.requests
        const turn: Turn = {
          result,
          serviceMs: perRequest(cpuSeconds(pid) - before.service),
          postgresMs: perRequest(postgres),
          bouncerMs: perRequest(cpuSeconds(bouncer.pid) - before.bouncer),
        }
        const key = `${scenario.name}|${name}`
        results.set(key, [...(results.get(key) ?? []), turn])
        console.error(
          `round ${round + 1}, ${scenario.name}, ${name}: ${result.rps.toFixed(0)} req/s, p99 ${result.p99Ms.toFixed(2)} ms, ${result.failures} failures; CPU/request service ${turn.serviceMs.toFixed(3)} ms, PostgreSQL ${turn.postgresMs.toFixed(3)} ms, PgBouncer ${turn.bouncerMs.toFixed(3)} ms`,
        )
      }
    }
  }

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 0 })
  const lines = [
    `# PgBouncer (transaction mode) against direct — ${new Date().toISOString()}`,
    '',
    `Machine: ${machine()}. ${args.listings} listings of one provider, ANALYZEd. Load: ${loadTool}, ${CONNECTIONS} connections, ${DURATION_S} s per turn after a 1 s warm-up; ${ROUNDS} rounds, the services' order rotating each round.`,
    `Command: \`npx tsx bench/pgbouncer.ts${args.base ? ` --base ${args.base}` : ''} --listings ${args.listings} --duration ${DURATION_S} --rounds ${ROUNDS} --connections ${CONNECTIONS}\`.`,
    '',
    'CPU per request is milliseconds of CPU time over the turn divided by its requests (median of the rounds): the service process (every thread), the PostgreSQL backends connected to the benchmark database, PgBouncer (only the third service goes through it, but it is counted for every turn).',
    '',
    '| scenario | service | req/s per round | median req/s | median p99 | CPU/request: service | PostgreSQL | PgBouncer | sum | failures |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const scenario of scenarios) {
    for (const { name } of services) {
      const runs = results.get(`${scenario.name}|${name}`) ?? []
      const ms = (pick: (turn: Turn) => number) => median(runs.map(pick))
      const service = ms((t) => t.serviceMs)
      const postgres = ms((t) => t.postgresMs)
      const bouncerMs = name.includes('PgBouncer') ? ms((t) => t.bouncerMs) : 0
      lines.push(
        `| ${scenario.name} | ${name} | ${runs.map((r) => fmt(r.result.rps)).join(', ')} | ${fmt(median(runs.map((r) => r.result.rps)))} | ${median(runs.map((r) => r.result.p99Ms)).toFixed(2)} ms | ${service.toFixed(3)} ms | ${postgres.toFixed(3)} ms | ${bouncerMs.toFixed(3)} ms | ${(service + postgres + bouncerMs).toFixed(3)} ms | ${runs.reduce((n, r) => n + r.result.failures, 0)} |`,
      )
    }
  }
  lines.push('', ...pgbenchSection(fresh.url, seeded.providerId))
  console.log(lines.join('\n'))
  console.log(`written to ${writeResult('pgbouncer', `${lines.join('\n')}\n`)}`)
} finally {
  await Promise.all(services.map(({ service }) => service.stop()))
  await fresh.drop()
  await bouncer.stop()
  await images.close()
}
