/**
 * Image checks under load (issue 3), against the service as `npm start` runs it:
 * 1. A create with 100 distinct item images on loopback: median and p90 latency, next to the same create
 *    without item images (the baseline, measured in the same run).
 * 2. Twenty concurrent creates pointing at a 6 MB image (chunked, no length: the reader must count and stop):
 *    the service's peak memory growth, next to twenty concurrent creates with tiny images.
 */
import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { startImageServer } from '../test/image-server.js'
import { listingBody, machine, percentile, rssBytes, startService, writeResult, type RunningService } from './lib.js'

const RUNS = Number(process.env.BENCH_RUNS ?? 20)
const MB = 1_000_000

const images = await startImageServer()

const listing = (brandUrl: string, itemUrls: Array<string | undefined>) => listingBody(randomUUID(), brandUrl, itemUrls)

async function create(service: RunningService, body: unknown): Promise<number> {
  const response = await fetch(`${service.baseUrl}/api/v1/listing/create`, {
    method: 'POST',
    headers: { authorization: `Bearer ${service.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  await response.arrayBuffer()
  return response.status
}

async function timeCreates(service: RunningService, makeBody: () => unknown, expected: number): Promise<number[]> {
  const times: number[] = []
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now()
    const status = await create(service, makeBody())
    times.push(performance.now() - started)
    if (status !== expected) throw new Error(`create answered ${status}, expected ${expected}`)
  }
  return times
}

/** Peak RSS growth of the service while `work` runs, sampled every 5 ms. */
async function peakGrowth(service: RunningService, work: () => Promise<unknown>): Promise<number> {
  const pid = service.child.pid as number
  await sleep(200) // let the previous scenario's garbage settle before the reading
  const before = rssBytes(pid)
  let peak = before
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, rssBytes(pid))
      await sleep(5)
    }
  })()
  await work()
  sampling = false
  await sampler
  return peak - before
}

const service = await startService({ IMAGE_ALLOW_PRIVATE_NETWORKS: 'true' })
try {
  // Warm up: JIT, connections, the brand image in the cache.
  await timeCreates(service, () => listing(images.url('/img/brand.png'), Array(100).fill(undefined)), 201)

  const baseline = await timeCreates(service, () => listing(images.url('/img/brand.png'), Array(100).fill(undefined)), 201)
  const distinct = await timeCreates(
    service,
    () =>
      listing(
        images.url('/img/brand.png'),
        Array.from({ length: 100 }, () => images.url(`/img/${randomUUID()}.png`)),
      ),
    201,
  )

  const tinyGrowth = await peakGrowth(service, () =>
    Promise.all(Array.from({ length: 20 }, () => create(service, listing(images.url(`/img/${randomUUID()}.png`), [undefined])))),
  )
  const bigGrowth = await peakGrowth(service, async () => {
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () => create(service, listing(images.url(`/size/${6 * MB}?ranges=off&length=off&n=${randomUUID()}`), [undefined]))),
    )
    if (statuses.some((s) => s !== 413)) throw new Error(`expected 413s, got ${statuses.join(', ')}`)
  })

  const ms = (v: number) => `${v.toFixed(1)} ms`
  const mb = (v: number) => `${(v / 1024 / 1024).toFixed(1)} MiB`
  const table = [
    `# Image checks — ${new Date().toISOString()}`,
    '',
    `Machine: ${machine()}. Service: \`node dist/cli/main.js serve\` on SQLite; images from a Node HTTP server`,
    `on 127.0.0.1 in the benchmark process. ${RUNS} sequential creates per row. Command: \`npm run bench:images\`.`,
    '',
    '| scenario | median | p90 |',
    '|---|---|---|',
    `| create, 100 items, no item images (baseline) | ${ms(percentile(baseline, 50))} | ${ms(percentile(baseline, 90))} |`,
    `| create, 100 items, 100 distinct item images (target: median < 1 s) | ${ms(percentile(distinct, 50))} | ${ms(percentile(distinct, 90))} |`,
    '',
    '| scenario | peak RSS growth of the service |',
    '|---|---|',
    `| 20 concurrent creates, tiny images (baseline) | ${mb(tinyGrowth)} |`,
    `| 20 concurrent creates, 6 MB image each, chunked without length (target: < 50 MB) | ${mb(bigGrowth)} |`,
    '',
  ].join('\n')
  console.log(table)
  console.log(`written to ${writeResult('images', table)}`)
} finally {
  await service.stop()
  await images.close()
}
