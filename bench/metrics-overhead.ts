/**
 * What the metrics cost a page request, in one process and one run: the same page (limit 10 of 50 listings, SQLite)
 * through two apps on one database file, one recording metrics (request counter and histogram, and the database
 * query histogram through Kysely's log hook) and one whose recorders do nothing. Rounds alternate between the two
 * so drift on a shared machine hits both alike; CPU time per request is compared (median and fastest round).
 *
 *   npx tsx bench/metrics-overhead.ts [--requests 2000] [--rounds 9]
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase, type Database } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { PreparedQuery } from '../src/db/prepared-query.js'
import { Metrics } from '../src/metrics.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { listingBody } from '../test/fixtures.js'

const { values: args } = parseArgs({
  options: { requests: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '9' } },
})
const REQUESTS = Number(args.requests)
const ROUNDS = Number(args.rounds)

/** Metrics whose request and query recorders do nothing: the hook still runs, prom-client is never called. */
class SilentMetrics extends Metrics {
  override observeRequest(): void {}
}

const dir = mkdtempSync(join(tmpdir(), 'listing-metrics-bench-'))
const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '0' })

async function variant(metrics: Metrics, observeQueries: boolean): Promise<{ app: FastifyInstance; database: Database }> {
  const database = openDatabase(config.DATABASE_URL, observeQueries ? { observeQuery: metrics.observeQuery } : {})
  await migrate(database)
  const app = await buildApp({ config, database, metrics, checkImages: async () => {} })
  return { app, database }
}

const measured = await variant(new Metrics(), true)
const silent = await variant(new SilentMetrics(), false)
const { token } = (await new ProviderRepository(measured.database).create({ name: 'bench' }, Date.now())).token
for (let i = 0; i < 50; i++) {
  const response = await measured.app.inject({
    method: 'POST',
    url: '/api/v1/listing/create',
    headers: { authorization: `Bearer ${token}` },
    payload: listingBody({}, 5),
  })
  if (response.statusCode !== 201) throw new Error(response.body)
}

/** CPU microseconds per page request over `REQUESTS` sequential requests. */
async function round(app: FastifyInstance): Promise<number> {
  const request = { method: 'GET' as const, url: '/api/v1/listing?page=2&limit=10', headers: { authorization: `Bearer ${token}` } }
  const start = process.cpuUsage()
  for (let i = 0; i < REQUESTS; i++) {
    const response = await app.inject(request)
    if (response.statusCode !== 200) throw new Error(response.body)
  }
  const used = process.cpuUsage(start)
  return (used.user + used.system) / REQUESTS
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
const times = { measured: [] as number[], silent: [] as number[] }
await round(measured.app) // warm-up: JIT, statement caches, token cache
await round(silent.app)
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? (['measured', 'silent'] as const) : (['silent', 'measured'] as const)
  for (const name of order) times[name].push(await round(name === 'measured' ? measured.app : silent.app))
}

// The recorders alone, without Fastify or the database around them.
const metrics = new Metrics()
const CALLS = 1_000_000
function nsPerCall(call: () => void): number {
  const start = process.cpuUsage()
  for (let i = 0; i < CALLS; i++) call()
  const used = process.cpuUsage(start)
  return ((used.user + used.system) * 1000) / CALLS
}
const requestNs = nsPerCall(() => metrics.observeRequest('GET', '/api/v1/listing', 200, 0.0004))
const queryNs = nsPerCall(() => metrics.observeQuery('select', 0.00005))

// One PreparedQuery select (a provider by id) on each database: Kysely's log hook and the histogram, alone.
const byId = (database: Database) =>
  new PreparedQuery<{ id: string }, { name: string }>(database.kysely, (db, param) => db.selectFrom('providers').select('name').where('id', '=', param('id')))
const queries = { measured: byId(measured.database), silent: byId(silent.database) }
const providerId = (await measured.database.kysely.selectFrom('providers').select('id').executeTakeFirstOrThrow()).id
const queryTimes = { measured: [] as number[], silent: [] as number[] }
for (let r = 0; r < ROUNDS; r++) {
  for (const name of ['measured', 'silent'] as const) {
    const start = process.cpuUsage()
    for (let i = 0; i < REQUESTS * 5; i++) await queries[name].execute({ id: providerId })
    const used = process.cpuUsage(start)
    queryTimes[name].push((used.user + used.system) / (REQUESTS * 5))
  }
}

const [m, s] = [median(times.measured), median(times.silent)]
// On a shared machine other processes only ever add time, so the fastest round is the steadiest figure.
const [mMin, sMin] = [Math.min(...times.measured), Math.min(...times.silent)]
console.log(`page request, CPU µs per request (${ROUNDS} rounds × ${REQUESTS} requests via inject):`)
console.log(`  with metrics    median ${m.toFixed(1)}  fastest ${mMin.toFixed(1)}   rounds: ${times.measured.map((t) => t.toFixed(0)).join(' ')}`)
console.log(`  without         median ${s.toFixed(1)}  fastest ${sMin.toFixed(1)}   rounds: ${times.silent.map((t) => t.toFixed(0)).join(' ')}`)
console.log(`  difference      median ${(m - s).toFixed(1)} µs, fastest ${(mMin - sMin).toFixed(1)} µs (${(((mMin - sMin) / sMin) * 100).toFixed(1)} %)`)
const [qm, qs] = [Math.min(...queryTimes.measured), Math.min(...queryTimes.silent)]
console.log(`one select, CPU µs (fastest round): with the query histogram ${qm.toFixed(2)}, without ${qs.toFixed(2)}, difference ${(qm - qs).toFixed(2)} µs`)
console.log(`observeRequest alone: ${requestNs.toFixed(0)} ns/call; observeQuery alone: ${queryNs.toFixed(0)} ns/call`)

for (const { app, database } of [measured, silent]) {
  await app.close()
  await database.close()
}
rmSync(dir, { recursive: true, force: true })
