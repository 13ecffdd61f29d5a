import assert from 'node:assert/strict'
import http from 'node:http'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { openImageStore } from '../src/images/image-store.js'
import { DecodeSlots } from '../src/images/process-image.js'
import { jobDatabase } from '../src/db/connection.js'
import { removeUnusedImages } from '../src/images/uploads.js'
import { item, listingBody } from './fixtures.js'
import { describeEachDialect, type Response, type TestService } from './helper.js'
import { assertProblem, pointersOf } from './http-support.js'
import { imageOf, metadataOf, phonePhoto, pngBomb, SECRET_COMMENT, XMP_MARKER } from './image-files.js'
import { startImageServer, type ImageServer } from './image-server.js'

/** docs/api.md#photos: uploads, what is served, listings naming them, and their removal when unused. */

const MAX_BYTES = 1024 * 1024
const DAY_MS = 24 * 3600 * 1000

const upload = (service: TestService, token: string, bytes: Buffer, type = 'image/jpeg') =>
  service.request('POST', '/api/v1/images', { token, headers: { 'content-type': type }, raw: bytes })

/** The served bytes of a url the service gave, from wherever the test reaches it. */
async function served(service: TestService, url: string, headers: Record<string, string> = {}, method = 'GET') {
  const response = await fetch(new URL(new URL(url).pathname, service.baseUrl), { method, headers })
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) }
}

/** A listing naming `brand` as its brand image and `items` as its items' (undefined: none). */
const naming = (brand: string, items: Array<string | undefined> = [undefined]) =>
  listingBody({
    brand: { displayName: { ar: 'مخبز', en: 'Bakery' }, urlSafeName: 'bakery', imageUrl: brand },
    items: items.map((url, i) => item(i, url === undefined ? {} : { imageUrl: url })),
  })

const imageRows = async (service: TestService) => (await sql<{ id: string }>`select id from images`.execute(service.database.kysely)).rows

const providerImages = async (service: TestService, providerId: string) =>
  (await sql<{ id: string }>`select id from images where provider_id = ${providerId}`.execute(service.database.kysely)).rows.map((row) => row.id).sort()

/** Sends the first `sent` bytes of an upload and leaves the request open: whatever answers did not wait for its end. */
function uploadLeftOpen(service: TestService, token: string, head: Buffer, sent: number, headers: Record<string, string> = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const request = http.request(new URL('/api/v1/images', service.baseUrl), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'image/jpeg', ...headers },
    })
    request.on('response', (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => {
        request.destroy()
        const fetched = new Headers(Object.entries(response.headers).map(([name, value]): [string, string] => [name, String(value)]))
        resolve({ status: response.statusCode ?? 0, headers: fetched, text, body: JSON.parse(text) })
      })
    })
    request.on('error', reject)
    request.write(head)
    for (let at = head.length; at < sent; at += 64 * 1024) request.write(Buffer.alloc(Math.min(64 * 1024, sent - at)))
  })
}

await describeEachDialect(
  'photos: uploads',
  (service) => {
    test('a phone photo is 201 with its url, served upright without EXIF, GPS, XMP or comment', async () => {
      const provider = await service.newProvider()
      const photo = await phonePhoto(320, 240)
      const before = await metadataOf(photo)
      // The file as a phone writes it: what must not leave the service is there.
      assert.deepEqual([before.gps, before.orientation, before.xmp !== undefined, photo.includes(SECRET_COMMENT)], [true, 6, true, true])

      const response = await upload(service, provider.token, photo)
      assert.equal(response.status, 201, response.text)
      const { id, url, format, bytes, width, height } = response.body
      assert.match(id, /^img_[A-Za-z0-9_-]{24}$/)
      assert.equal(url, `${service.baseUrl}/images/${id}.jpg`)
      assert.equal(response.headers.get('location'), url)
      // Turned a quarter: 320 × 240 stored sideways is 240 × 320 upright.
      assert.deepEqual({ format, width, height }, { format: 'jpeg', width: 240, height: 320 })

      const image = await served(service, url)
      assert.equal(image.status, 200)
      assert.equal(image.bytes.length, bytes)
      const after = await metadataOf(image.bytes)
      assert.deepEqual(
        { exif: after.exif, gps: after.gps, xmp: after.xmp, iptc: after.iptc, comments: after.comments, orientation: after.orientation },
        { exif: undefined, gps: false, xmp: undefined, iptc: undefined, comments: undefined, orientation: undefined },
      )
      assert.deepEqual([after.format, after.width, after.height], ['jpeg', 240, 320])
      for (const trace of ['Exif', 'PhoneMaker', SECRET_COMMENT, XMP_MARKER, 'xmpmeta'])
        assert.ok(!image.bytes.includes(trace), `the served bytes hold ${trace}`)
    })

    test('each format stays itself; PNG and WebP lose their XMP and comments; an animated GIF keeps its first frame', async () => {
      const provider = await service.newProvider()
      for (const [format, extension] of [
        ['png', 'png'],
        ['webp', 'webp'],
        ['gif', 'gif'],
      ] as const) {
        const original = await imageOf(format, 320, 200)
        if (format === 'gif') assert.equal((await metadataOf(original)).pages, 2)
        // The Content-Type names a type; the content decides which.
        const response = await upload(service, provider.token, original, 'image/jpeg')
        assert.equal(response.status, 201, `${format}: ${response.text}`)
        assert.equal(response.body.format, format)
        assert.match(response.body.url, new RegExp(`\\.${extension}$`))
        const image = await served(service, response.body.url)
        assert.equal(image.headers.get('content-type'), `image/${format}`)
        const after = await metadataOf(image.bytes)
        assert.deepEqual(
          [after.format, after.width, after.height, after.xmp, after.comments, after.pages ?? 1],
          [format, 320, 200, undefined, undefined, 1],
          format,
        )
        assert.ok(!image.bytes.includes(SECRET_COMMENT) && !image.bytes.includes(XMP_MARKER), format)
      }
    })

    test('an image larger than IMAGE_MAX_EDGE is scaled to it on its longer side', async () => {
      const provider = await service.newProvider()
      const response = await upload(service, provider.token, await imageOf('png', 600, 150), 'image/png')
      assert.equal(response.status, 201, response.text)
      assert.deepEqual([response.body.width, response.body.height], [400, 100])
    })

    test('the same bytes again are the same image (200); another provider’s upload of them is its own', async () => {
      const [one, two] = [await service.newProvider(), await service.newProvider()]
      const photo = await phonePhoto(200, 100)
      const first = await upload(service, one.token, photo)
      const again = await upload(service, one.token, photo)
      const other = await upload(service, two.token, photo)
      assert.deepEqual([first.status, again.status, other.status], [201, 200, 201])
      assert.deepEqual(again.body, first.body)
      assert.notEqual(other.body.id, first.body.id)
    })

    test('the same bytes uploaded at once are stored once', async () => {
      const provider = await service.newProvider()
      const photo = await phonePhoto(300, 200)
      const answers = await Promise.all(Array.from({ length: 4 }, () => upload(service, provider.token, photo)))
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 200, 200, 201])
      assert.equal(new Set(answers.map((answer) => answer.body.id)).size, 1)
      const rows = await sql<{ n: number }>`select count(*) as n from images where provider_id = ${provider.id}`.execute(service.database.kysely)
      assert.equal(Number(rows.rows[0]?.n), 1)
    })

    test('another Content-Type is 415 unsupported-media-type; bytes that are no accepted image are 415 unsupported-image-format', async () => {
      const provider = await service.newProvider()
      const photo = await phonePhoto(64, 64)
      for (const type of ['application/json', 'image/svg+xml', 'application/octet-stream', 'text/plain']) {
        const body = assertProblem(await upload(service, provider.token, photo, type), 415, 'unsupported-media-type')
        assert.deepEqual(body.errors, [{ header: 'Content-Type', detail: 'must be one of image/jpeg, image/png, image/webp, image/gif' }])
      }
      const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
      const refused = assertProblem(await upload(service, provider.token, svg, 'image/png'), 415, 'unsupported-image-format')
      assert.deepEqual(refused.errors, [{ pointer: '', detail: 'content is image/svg+xml; accepted: jpg, png, gif, webp' }])
      assertProblem(await upload(service, provider.token, Buffer.alloc(0), 'image/png'), 415, 'unsupported-image-format')
      // No body and no Content-Type at all: no body parser runs (found by fuzzing: it was a 500).
      const bare = await fetch(new URL('/api/v1/images', service.baseUrl), { method: 'POST', headers: { authorization: `Bearer ${provider.token}` } })
      const bareBody = (await bare.json()) as { type: string; errors: unknown }
      assert.equal(bare.status, 415)
      assert.equal(bareBody.type, '/problems/unsupported-media-type')
      assert.deepEqual(bareBody.errors, [{ header: 'Content-Type', detail: 'must be one of image/jpeg, image/png, image/webp, image/gif' }])
    })

    test('a truncated or corrupt image is 400 invalid-request', async () => {
      const provider = await service.newProvider()
      const stored = (await imageRows(service)).length
      const photo = await phonePhoto(320, 240)
      const png = await imageOf('png', 320, 240)
      const corrupt = Buffer.from(photo)
      corrupt.fill(0x7f, 800, 1600)
      for (const [name, bytes] of [
        ['truncated jpeg', photo.subarray(0, Math.floor(photo.length / 2))],
        ['truncated png', png.subarray(0, Math.floor(png.length / 2))],
        ['corrupt jpeg', corrupt],
        ['a header alone', photo.subarray(0, 20)],
      ] as const) {
        const body = assertProblem(await upload(service, provider.token, bytes), 400, 'invalid-request')
        assert.equal(body.errors?.[0]?.pointer, '', name)
      }
      assert.equal((await imageRows(service)).length, stored, 'nothing stored')
    })

    test('a decompression bomb is 400 at once, from its header: a 300-byte PNG of 10 billion pixels, a real PNG over IMAGE_MAX_PIXELS', async () => {
      const provider = await service.newProvider()
      const bomb = pngBomb(100_000, 100_000)
      assert.ok(bomb.length < 300)
      const started = performance.now()
      const body = assertProblem(await upload(service, provider.token, bomb, 'image/png'), 400, 'invalid-request')
      assert.deepEqual(body.errors, [{ pointer: '', detail: 'is 100000 × 100000 pixels; at most 1000000 pixels are accepted' }])
      // Decoding 30 GB of pixels would take minutes, if memory allowed it at all.
      assert.ok(performance.now() - started < 5000)
      const large = await imageOf('png', 1001, 1000)
      const over = assertProblem(await upload(service, provider.token, large, 'image/png'), 400, 'invalid-request')
      assert.match(over.detail, /1 field is invalid/)
    })

    test('over IMAGE_MAX_BYTES is 413 image-too-large, refused unread when declared, and read no further than the limit when not', async () => {
      const provider = await service.newProvider()
      const head = (await phonePhoto(64, 64)).subarray(0, 64)
      // Declared: the answer comes before any of the body is sent.
      const declared = await uploadLeftOpen(service, provider.token, Buffer.alloc(0), 0, { 'content-length': String(MAX_BYTES + 1) })
      assert.deepEqual(assertProblem(declared, 413, 'image-too-large').errors, [{ pointer: '', detail: 'is larger than 1 MiB' }])
      // Chunked: the answer comes once the limit is passed, while the upload is still going on.
      const streamed = await uploadLeftOpen(service, provider.token, head, MAX_BYTES + 128 * 1024)
      assertProblem(streamed, 413, 'image-too-large')
      assert.equal(streamed.headers.get('connection'), 'close')
    })

    test('a marketplace token is 403; no token 401', async () => {
      const marketplace = await service.newMarketplace()
      const photo = await phonePhoto(64, 64)
      assertProblem(await upload(service, marketplace.token, photo), 403, 'forbidden')
      assertProblem(await service.request('POST', '/api/v1/images', { headers: { 'content-type': 'image/jpeg' }, raw: photo }), 401, 'unauthorized')
    })

    test('served without a token: immutable, a strong ETag answering 304, nosniff, sandboxed; HEAD has the length', async () => {
      const provider = await service.newProvider()
      const { body } = await upload(service, provider.token, await imageOf('webp'), 'image/webp')
      const image = await served(service, body.url)
      assert.equal(image.status, 200)
      const headers = Object.fromEntries(
        ['content-type', 'content-length', 'cache-control', 'etag', 'x-content-type-options', 'content-security-policy'].map((name) => [
          name,
          image.headers.get(name),
        ]),
      )
      assert.deepEqual(headers, {
        'content-type': 'image/webp',
        'content-length': String(body.bytes),
        'cache-control': 'public, max-age=31536000, immutable',
        etag: `"${body.id}"`,
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; sandbox",
      })
      const notModified = await served(service, body.url, { 'if-none-match': `"x", ${headers.etag}` })
      assert.deepEqual([notModified.status, notModified.bytes.length, notModified.headers.get('etag')], [304, 0, headers.etag])
      assert.equal((await served(service, body.url, { 'if-none-match': '"img_other"' })).status, 200)
      const head = await served(service, body.url, {}, 'HEAD')
      assert.deepEqual([head.status, head.headers.get('content-length'), head.bytes.length], [200, String(body.bytes), 0])
    })

    test('an unknown id, another extension or a name of another shape is 404 not-found, cached by nobody', async () => {
      const provider = await service.newProvider()
      const { body } = await upload(service, provider.token, await phonePhoto(64, 64))
      for (const file of [`img_${'A'.repeat(24)}.jpg`, `${body.id}.png`, `${body.id}.jpeg`, body.id, '..%2Flistings.db', `${body.id}.jpg.jpg`]) {
        const response = await service.request('GET', `/images/${file}`)
        const problem = assertProblem(response, 404, 'not-found')
        assert.equal(response.headers.get('cache-control'), null, file)
        assert.ok(problem.detail.length > 0)
      }
    })
  },
  { env: { IMAGE_MAX_BYTES: String(MAX_BYTES), IMAGE_MAX_PIXELS: '1000000', IMAGE_MAX_EDGE: '400', RATE_LIMIT_PER_MINUTE: '0' } },
)

await describeEachDialect(
  'photos: listings name them',
  (service) => {
    test('a listing naming its own uploads is created without fetching them, with private networks refused', async () => {
      assert.equal(service.config.IMAGE_ALLOW_PRIVATE_NETWORKS, false)
      const provider = await service.newProvider()
      const brand = (await upload(service, provider.token, await imageOf('png'), 'image/png')).body.url
      const croissant = (await upload(service, provider.token, await phonePhoto(120, 80))).body.url
      const response = await service.create(provider.token, naming(brand, [croissant, undefined, croissant]))
      assert.equal(response.status, 201, response.text)
    })

    test('a url of this service naming no upload of yours is 400 image-unavailable at its pointer; so is another provider’s', async () => {
      const [one, two] = [await service.newProvider(), await service.newProvider()]
      const mine = (await upload(service, one.token, await phonePhoto(90, 60))).body.url as string
      const theirs = (await upload(service, two.token, await phonePhoto(91, 60))).body.url as string
      const unknown = `${service.baseUrl}/images/img_${'B'.repeat(24)}.jpg`
      const otherExtension = mine.replace(/\.jpg$/, '.png')
      const response = await service.create(one.token, naming(mine, [unknown, undefined, theirs, otherExtension, `${service.baseUrl}/images/`]))
      const body = assertProblem(response, 400, 'image-unavailable')
      assert.deepEqual(pointersOf(body), ['/items/0/imageUrl', '/items/2/imageUrl', '/items/3/imageUrl', '/items/4/imageUrl'])
      assert.equal(body.errors[0].detail, 'no image you uploaded has this url')
      assert.equal((await service.list(one.token)).body.recordCount, 0)
    })

    test('with fetched images that fail too, every failing image is named and the first in document order sets the status', async () => {
      const provider = await service.newProvider()
      const unknown = `${service.baseUrl}/images/img_${'C'.repeat(24)}.png`
      // A loopback address: refused, as private networks are here.
      const response = await service.create(provider.token, naming('http://127.0.0.1:9/logo.png', [unknown]))
      assert.deepEqual(pointersOf(assertProblem(response, 400, 'image-unavailable')), ['/brand/imageUrl', '/items/0/imageUrl'])
    })

    test('an upload no listing names is removed after IMAGE_UNUSED_DAYS; one a listing names stays; a repeated upload starts its days again', async () => {
      const provider = await service.newProvider()
      const store = await openImageStore(service.config)
      const remove = () => removeUnusedImages(jobDatabase(service.database), store, { beforeMs: service.clock.now - 7 * DAY_MS, limit: 100 })
      const listed = (await upload(service, provider.token, await phonePhoto(50, 40))).body
      const unused = (await upload(service, provider.token, await phonePhoto(51, 40))).body
      const repeatedPhoto = await phonePhoto(52, 40)
      const repeated = (await upload(service, provider.token, repeatedPhoto)).body
      assert.equal((await service.create(provider.token, naming(listed.url))).status, 201)
      const statuses = () => Promise.all([listed, unused, repeated].map(async ({ url }) => (await served(service, url)).status))

      service.clock.now += 6 * DAY_MS
      await remove()
      assert.deepEqual(await statuses(), [200, 200, 200])
      assert.equal((await upload(service, provider.token, repeatedPhoto)).status, 200)
      service.clock.now += 2 * DAY_MS
      await remove()
      assert.deepEqual(await statuses(), [200, 404, 200])
      assert.deepEqual(await providerImages(service, provider.id), [listed.id, repeated.id].sort())
      // Once removed, its url is as unknown to a create as any other.
      assertProblem(await service.create(provider.token, naming(unused.url)), 400, 'image-unavailable')
      service.clock.now += 30 * DAY_MS
      await remove()
      assert.deepEqual(await statuses(), [200, 404, 404])
      assert.equal((await service.create(provider.token, naming(listed.url))).status, 201)
    })

    test('two removals at once remove each unused upload once', async () => {
      const provider = await service.newProvider()
      const store = await openImageStore(service.config)
      for (let n = 0; n < 6; n++) await upload(service, provider.token, await phonePhoto(60 + n, 40))
      service.clock.now += 8 * DAY_MS
      const options = { beforeMs: service.clock.now - 7 * DAY_MS, limit: 100 }
      const due = await sql<{ n: number }>`select count(*) as n from images where listed_at_ms is null and last_used_ms < ${options.beforeMs}`.execute(
        service.database.kysely,
      )
      const removed = await Promise.all([
        removeUnusedImages(jobDatabase(service.database), store, options),
        removeUnusedImages(jobDatabase(service.database), store, options),
      ])
      assert.equal(removed[0] + removed[1], Number(due.rows[0]?.n))
      assert.deepEqual(await providerImages(service, provider.id), [])
    })
  },
  { env: { IMAGE_ALLOW_PRIVATE_NETWORKS: 'false', RATE_LIMIT_PER_MINUTE: '0' } },
)

await describeEachDialect(
  'photos: fetched images keep their checks beside hosted ones',
  (service) => {
    let images: ImageServer
    before(async () => {
      images = await startImageServer()
    })
    after(() => images.close())

    test('a fetched SVG before a missing hosted image sets 415; the hosted one is named too', async () => {
      const provider = await service.newProvider()
      const unknown = `${service.baseUrl}/images/img_${'D'.repeat(24)}.jpg`
      const body = assertProblem(await service.create(provider.token, naming(images.url('/as/svg/logo.png'), [unknown])), 415, 'unsupported-image-format')
      assert.deepEqual(pointersOf(body), ['/brand/imageUrl', '/items/0/imageUrl'])
      const hostedFirst = assertProblem(await service.create(provider.token, naming(unknown, [images.url('/as/svg/logo.png')])), 400, 'image-unavailable')
      assert.deepEqual(pointersOf(hostedFirst), ['/brand/imageUrl', '/items/0/imageUrl'])
    })

    test('urls are under PUBLIC_BASE_URL; those and http://HOST:PORT ones are looked up, never fetched', async () => {
      const provider = await service.newProvider()
      const { body } = await upload(service, provider.token, await phonePhoto(40, 40))
      assert.equal(body.url, `https://photos.example.com/images/${body.id}.jpg`)
      const direct = `${service.baseUrl}/images/${body.id}.jpg`
      const before = images.requests.length
      assert.equal((await service.create(provider.token, naming(body.url, [direct, images.url('/tiny.png')]))).status, 201)
      assert.equal(images.requests.length - before, 1, 'only the image on another server was fetched')
    })
  },
  { env: { RATE_LIMIT_PER_MINUTE: '0', PUBLIC_BASE_URL: 'https://photos.example.com/' } },
)

await describeEachDialect(
  'photos: rate limit',
  (service) => {
    test('uploads count against RATE_LIMIT_PER_MINUTE', async () => {
      const provider = await service.newProvider()
      const photo = await phonePhoto(30, 30)
      assert.deepEqual([(await upload(service, provider.token, photo)).status, (await upload(service, provider.token, photo)).status], [201, 200])
      assertProblem(await upload(service, provider.token, photo), 429, 'rate-limited')
    })
  },
  { env: { RATE_LIMIT_PER_MINUTE: '2' } },
)

describe('photos: decode slots', () => {
  test('more uploads than eight per slot are 503 at once; one that waits past its budget is 503', async () => {
    const slots = new DecodeSlots(1, 50, 8)
    const releases = Array.from({ length: 8 }, () => slots.admit())
    assert.throws(() => slots.admit(), { type: 'unavailable', message: /too many uploads at once/ })
    releases[0]?.()
    releases[0]?.()
    slots.admit()
    assert.throws(() => slots.admit())

    let finish: () => void = () => {}
    const running = slots.run('a', () => new Promise<void>((resolve) => (finish = resolve)))
    await assert.rejects(
      slots.run('b', async () => {}),
      (error: { type?: string; headers?: Record<string, string> }) => error.type === 'unavailable' && error.headers?.['retry-after'] === '1',
    )
    finish()
    await running
    assert.equal(await slots.run('b', async () => 'ran'), 'ran')
  })

  test('a decode keeps one of libuv’s threads free for everything else', async () => {
    const slots = new DecodeSlots(4, 1000, 4)
    let running = 0
    let most = 0
    const work = async () => {
      running += 1
      most = Math.max(most, running)
      await new Promise((resolve) => setTimeout(resolve, 20))
      running -= 1
    }
    await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((owner) => slots.run(owner, work)))
    assert.equal(most, 3)
  })
})
