/**
 * Photos hosted by the service (issue 37), against the service as `npm start` runs it (SQLite, a directory store):
 * 1. Serving a hosted ~200 KB JPEG, next to the ceiling (a bare node:http server sending the same bytes), and its
 *    304s next to page 1; alternating, `--rounds` times.
 * 2. Uploading a ~4 MB 12-megapixel phone JPEG (EXIF with GPS, stored sideways), 4 clients back to back: p50, p99.
 * 3. 32 such uploads arriving at once: the service's peak RSS.
 * 4. Another client's page 1 at a fixed rate, alone and while 4 clients upload: its p99 (the decode must not
 *    block the event loop).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'
import sharp from 'sharp'
import { listingBody, machine, percentile, ROOT, rssBytes, startService, writeResult, type RunningService } from './lib.js'
import { runLoad, type LoadResult, type RequestKind } from './load.js'

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    uploads: { type: 'string', default: '40' },
    rate: { type: 'string', default: '200' },
  },
})
const ROUNDS = Number(args.rounds)
const DURATION_S = Number(args.duration)
const CONNECTIONS = Number(args.connections)
const UPLOADS = Number(args.uploads)
const PAGE_RATE = Number(args.rate)
const MiB = 1024 * 1024

/** A photo-like picture: noise, blurred, so it compresses as a photo does. */
async function photo(width: number, height: number, quality: number): Promise<Buffer> {
  const noise = await sharp({ create: { width, height, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } })
    .jpeg({ quality: 90 })
    .toBuffer()
  return sharp(noise)
    .blur(0.8)
    .jpeg({ quality })
    .withExif({ IFD0: { Make: 'PhoneMaker' }, IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '24/1 42/1 4900/100' } })
    .withMetadata({ orientation: 6 })
    .toBuffer()
}

/** The same photo with a different JPEG comment: other bytes (so never deduplicated), the same decode. */
function variant(jpeg: Buffer, n: number): Buffer {
  const comment = Buffer.from(`upload ${n} ${Math.random()}`)
  const segment = Buffer.from([0xff, 0xfe, 0, 0])
  segment.writeUInt16BE(comment.length + 2, 2)
  return Buffer.concat([jpeg.subarray(0, 2), segment, comment, jpeg.subarray(2)])
}

async function upload(service: RunningService, bytes: Buffer): Promise<{ status: number; ms: number; body: any }> {
  const started = performance.now()
  const response = await fetch(`${service.baseUrl}/api/v1/images`, {
    method: 'POST',
    headers: { authorization: `Bearer ${service.token}`, 'content-type': 'image/jpeg' },
    body: new Uint8Array(bytes),
  })
  const body = await response.json()
  return { status: response.status, ms: performance.now() - started, body }
}

/** `count` uploads of variants of `jpeg` by `clients` clients, each sending its next as its last is answered. */
async function uploadLoop(service: RunningService, jpeg: Buffer, count: number, clients: number): Promise<number[]> {
  const times: number[] = []
  let next = 0
  const client = async () => {
    while (next < count) {
      const { status, ms, body } = await upload(service, variant(jpeg, next++))
      if (status !== 201) throw new Error(`upload answered ${status}: ${JSON.stringify(body)}`)
      times.push(ms)
    }
  }
  await Promise.all(Array.from({ length: clients }, client))
  return times
}

async function startCeiling(bytes: Buffer): Promise<{ baseUrl: string; stop(): void; folder: string }> {
  const folder = mkdtempSync(join(tmpdir(), 'listing-ceiling-'))
  writeFileSync(join(folder, 'image.jpg'), bytes)
  const child = spawn(process.execPath, [join(ROOT, 'bench/ceiling-server.mjs'), join(folder, 'image.jpg')], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<string>((resolve) => child.stdout.setEncoding('utf8').once('data', (d: string) => resolve(d.trim())))
  return { baseUrl: `http://127.0.0.1:${port}`, folder, stop: () => child.kill('SIGTERM') }
}

const storeFolder = mkdtempSync(join(tmpdir(), 'listing-bench-images-'))
// MALLOC_ARENA_MAX, when set here, is passed on (docs/operations.md#uploaded-images); unset, the service runs as `npm start` does.
const arenas: Record<string, string> = process.env.MALLOC_ARENA_MAX === undefined ? {} : { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX }
const service = await startService({ IMAGE_STORE_URL: `file:${storeFolder}`, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true', ...arenas })
try {
  const auth = { authorization: `Bearer ${service.token}` }
  // ---- 1. serving ------------------------------------------------------------------------------------------------
  const small = await upload(service, await photo(1100, 820, 85))
  const hosted = small.body as { url: string; bytes: number }
  const path = new URL(hosted.url).pathname
  const servedBytes = Buffer.from(await (await fetch(`${service.baseUrl}${path}`)).arrayBuffer())
  // Ten listings naming it, so page 1 reads something (and the hosted url is checked by look-up).
  for (let i = 0; i < 10; i++) {
    const created = await fetch(`${service.baseUrl}/api/v1/listing/create`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify(listingBody(`bench-hosted-${i}`, hosted.url, [hosted.url])),
    })
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${await created.text()}`)
  }
  const etag = (await fetch(`${service.baseUrl}${path}`, { method: 'HEAD' })).headers.get('etag') as string
  const ceiling = await startCeiling(servedBytes)
  const kinds = {
    ceiling: [{ weight: 1, method: 'GET', path: '/', headers: {} }],
    image: [{ weight: 1, method: 'GET', path, headers: {} }],
    notModified: [{ weight: 1, method: 'GET', path, headers: { 'if-none-match': etag } }],
    page1: [{ weight: 1, method: 'GET', path: '/api/v1/listing?page=1&limit=10', headers: auth }],
  } satisfies Record<string, RequestKind[]>
  const serving: Record<keyof typeof kinds, LoadResult[]> = { ceiling: [], image: [], notModified: [], page1: [] }
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of Object.keys(kinds) as Array<keyof typeof kinds>) {
      const base = name === 'ceiling' ? ceiling.baseUrl : service.baseUrl
      await runLoad(base, kinds[name], { connections: CONNECTIONS, durationS: 2 })
      serving[name].push(await runLoad(base, kinds[name], { connections: CONNECTIONS, durationS: DURATION_S }))
    }
  }
  ceiling.stop()
  rmSync(ceiling.folder, { recursive: true, force: true })

  // ---- 2. uploads at 4 concurrent --------------------------------------------------------------------------------
  const phone = await photo(4000, 3000, 90)
  const meta = await sharp(phone).metadata()
  await uploadLoop(service, phone, 4, 4) // warm-up
  const uploadTimes = await uploadLoop(service, phone, UPLOADS, 4)

  // ---- 3. 32 at once ---------------------------------------------------------------------------------------------
  await sleep(500)
  const pid = service.child.pid as number
  const rssBefore = rssBytes(pid)
  let rssPeak = rssBefore
  let sampling = true
  const sampler = (async () => {
    while (sampling) {
      rssPeak = Math.max(rssPeak, rssBytes(pid))
      await sleep(20)
    }
  })()
  const burst = await Promise.all(Array.from({ length: 32 }, (_, n) => upload(service, variant(phone, 10_000 + n))))
  sampling = false
  await sampler
  const burstStatuses = new Map<number, number>()
  for (const { status } of burst) burstStatuses.set(status, (burstStatuses.get(status) ?? 0) + 1)

  // ---- 4. page reads while uploads run ---------------------------------------------------------------------------
  const pagesAlone: LoadResult[] = []
  const pagesDuringUploads: LoadResult[] = []
  for (let round = 0; round < 2; round++) {
    pagesAlone.push(await runLoad(service.baseUrl, kinds.page1, { connections: 10, durationS: DURATION_S, rate: PAGE_RATE }))
    let uploading = true
    const uploads = (async () => {
      let n = 20_000 + round * 1000
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          while (uploading) await upload(service, variant(phone, n++))
        }),
      )
    })()
    pagesDuringUploads.push(await runLoad(service.baseUrl, kinds.page1, { connections: 10, durationS: DURATION_S, rate: PAGE_RATE }))
    uploading = false
    await uploads
  }

  const median = (results: LoadResult[], pick: (r: LoadResult) => number) => percentile(results.map(pick), 50)
  const ceilingRps = median(serving.ceiling, (r) => r.rps)
  const row = (name: string, results: LoadResult[]) => {
    const rps = median(results, (r) => r.rps)
    return `| ${name} | ${results.map((r) => r.rps.toFixed(0)).join(', ')} | ${rps.toFixed(0)} | ${((100 * rps) / ceilingRps).toFixed(0)}% | ${median(results, (r) => r.p99Ms).toFixed(1)} ms | ${results.reduce((n, r) => n + r.failures, 0)} |`
  }
  const ms = (v: number) => `${v.toFixed(0)} ms`
  const table = [
    `# Hosted images — ${new Date().toISOString()}`,
    '',
    `Machine: ${machine()} (shared with other sessions: figures are noisy). Service: \`node dist/cli/main.js serve\`, SQLite,`,
    `images in a directory${process.env.MALLOC_ARENA_MAX === undefined ? '' : `, MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX}`}. Command: \`npm run bench:images\` (\`tsx bench/hosted-images.ts --rounds ${ROUNDS} --duration ${DURATION_S}\`).`,
    '',
    `## Serving a hosted ${(servedBytes.length / 1024).toFixed(0)} KiB JPEG (${CONNECTIONS} connections, ${DURATION_S} s each, ${ROUNDS} rounds alternating)`,
    '',
    '| what | req/s, each round | median | of ceiling | p99 (median) | failures |',
    '|---|---|---|---|---|---|',
    row('ceiling: node:http, the same bytes from memory', serving.ceiling),
    row('GET /images/… from the directory store (target ≥ 50%)', serving.image),
    row('304 to If-None-Match (target ≥ page 1)', serving.notModified),
    row('page 1, limit 10 (10 listings)', serving.page1),
    '',
    `## Uploading a ${(phone.length / MiB).toFixed(1)} MiB ${meta.width} × ${meta.height} phone JPEG (EXIF with GPS, orientation 6)`,
    '',
    '| what | figure | target |',
    '|---|---|---|',
    `| ${UPLOADS} uploads, 4 clients back to back: p50 | ${ms(percentile(uploadTimes, 50))} | < 600 ms |`,
    `| the same: p99 | ${ms(percentile(uploadTimes, 99))} | < 1.5 s |`,
    `| 32 uploads at once: the service's peak RSS (before: ${(rssBefore / MiB).toFixed(0)} MiB) | ${(rssPeak / MiB).toFixed(0)} MiB | < 600 MiB |`,
    `| 32 uploads at once: answers | ${[...burstStatuses].map(([status, n]) => `${n} × ${status}`).join(', ')} | |`,
    `| page 1 at ${PAGE_RATE}/s alone: p99 (2 rounds) | ${pagesAlone.map((r) => `${r.p99Ms.toFixed(1)} ms`).join(', ')} | |`,
    `| page 1 at ${PAGE_RATE}/s while 4 clients upload: p99 | ${pagesDuringUploads.map((r) => `${r.p99Ms.toFixed(1)} ms`).join(', ')} | within 2× of alone |`,
    '',
  ].join('\n')
  console.log(table)
  console.log(`written to ${writeResult('hosted-images', table)}`)
} finally {
  await service.stop()
  rmSync(storeFolder, { recursive: true, force: true })
}
