import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import sharp from 'sharp'
import { sniffImageFormat } from '../src/images/sniff.js'
import { startService, testDialects, type TestProvider, type TestService } from './helper.js'
import { assertIsProblem, assertNoPollution, POSTGRES_SHARE, RUNS, SEED, send } from './fuzz-support.js'
import { imageOf, pngBomb } from './image-files.js'

// Fuzzing POST /api/v1/images with mutated images, random bytes and Content-Types: never a 5xx, every refusal a
// problem of its status, and whatever is accepted is served as an image that decodes whole.

const MAX_BYTES = 6000
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif']

/** Small images of each format: the seeds the mutations start from (filled before the first case). */
const seeds: Buffer[] = []

type Change =
  { kind: 'truncate'; at: number } | { kind: 'flip'; at: number; byte: number } | { kind: 'append'; bytes: Uint8Array } | { kind: 'behead'; at: number }

const change: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('append' as const), bytes: fc.uint8Array({ maxLength: 64 }) }),
  fc.record({ kind: fc.constant('behead' as const), at: fc.integer({ min: 1, max: 16 }) }),
)

function applyChange(bytes: Buffer, one: Change): Buffer {
  if (bytes.length === 0) return bytes
  if (one.kind === 'truncate') return bytes.subarray(0, one.at % bytes.length)
  if (one.kind === 'behead') return bytes.subarray(one.at)
  if (one.kind === 'append') return Buffer.concat([bytes, one.bytes])
  const copy = Buffer.from(bytes)
  copy[one.at % copy.length] = one.byte
  return copy
}

const magic = fc.constantFrom(
  [0xff, 0xd8, 0xff],
  [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
  [...Buffer.from('GIF89a')],
  [...Buffer.from('RIFF\0\0\0\0WEBP')],
)

const body: fc.Arbitrary<Buffer> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .tuple(fc.nat(), fc.array(change, { maxLength: 3 }))
      .map(([seed, changes]) => changes.reduce(applyChange, seeds[seed % seeds.length] as Buffer)),
  },
  { weight: 2, arbitrary: fc.tuple(magic, fc.uint8Array({ maxLength: 9000 })).map(([head, rest]) => Buffer.concat([Buffer.from(head), rest])) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 1 << 20 }), fc.integer({ min: 1, max: 1 << 20 })).map(([w, h]) => pngBomb(w, h)) },
)

const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...IMAGE_TYPES) },
  { weight: 1, arbitrary: fc.constantFrom('', 'application/json', 'image/svg+xml', 'IMAGE/PNG', 'image/png; charset=utf-8', 'image/*', 'multipart/form-data') },
  { weight: 1, arbitrary: fc.stringMatching(/^[\x21-\x7E]{1,40}$/) },
)

for (const dialect of await testDialects()) {
  const runs = dialect === 'sqlite' ? RUNS : Math.max(1, Math.round(RUNS * POSTGRES_SHARE))
  describe(`fuzz images [${dialect}]`, () => {
    const service = {} as TestService
    const provider = {} as TestProvider
    before(async () => {
      if (seeds.length === 0) for (const format of ['jpeg', 'png', 'webp', 'gif'] as const) seeds.push(await imageOf(format, 24, 16))
      Object.assign(
        service,
        await startService(dialect, { env: { RATE_LIMIT_PER_MINUTE: '0', IMAGE_MAX_BYTES: String(MAX_BYTES), IMAGE_MAX_PIXELS: '100000' } }),
      )
      Object.assign(provider, await service.newProvider())
    })
    after(() => service.close())

    test(`uploads: ${runs} mutated images, random bytes and Content-Types; never a 5xx, only whole images accepted`, async () => {
      let accepted = 0
      await fc.assert(
        fc.asyncProperty(body, contentType, async (bytes, type) => {
          const headers: Record<string, string> = { authorization: `Bearer ${provider.token}`, 'content-length': String(bytes.length) }
          if (type !== '') headers['content-type'] = type
          const response = await send(service.baseUrl, 'POST', '/api/v1/images', headers, bytes)
          const context = `${type} ${bytes.length} bytes → ${response.status} ${response.text.slice(0, 300)}`
          assertNoPollution()
          if (response.status === 200 || response.status === 201) {
            accepted += 1
            const declared = /^image\/(jpeg|png|webp|gif)$/i.test(type.split(';')[0]?.trim() ?? '')
            assert.ok(declared && bytes.length <= MAX_BYTES, context)
            assert.equal(response.body.format, sniffImageFormat(bytes), context)
            const served = await fetch(new URL(new URL(response.body.url).pathname, service.baseUrl))
            const image = Buffer.from(await served.arrayBuffer())
            assert.equal(served.status, 200, context)
            const decoded = await sharp(image, { failOn: 'warning' }).metadata()
            assert.deepEqual(
              [decoded.format, decoded.width, decoded.height, decoded.exif],
              [response.body.format, response.body.width, response.body.height, undefined],
            )
            return
          }
          const problem = assertIsProblem(response)
          if (bytes.length > MAX_BYTES && problem.type === '/problems/image-too-large') return
          if (problem.type === '/problems/unsupported-image-format') assert.equal(sniffImageFormat(bytes), undefined, context)
        }),
        { numRuns: runs, seed: SEED, includeErrorInReport: true },
      )
      // The seeds unchanged are accepted: the property saw both sides.
      assert.ok(accepted > 0)
    })
  })
}
