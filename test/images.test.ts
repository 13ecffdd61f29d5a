import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { item, listingBody } from './fixtures.js'
import { describeEachDialect } from './helper.js'
import { startImageServer, type ImageServer } from './image-server.js'

/** docs/api.md#images through the API: images are fetched and judged before a listing is stored. */

let images: ImageServer
before(async () => {
  images = await startImageServer()
})
after(async () => {
  await images.close()
})

/** A listing whose brand and items name these image paths on the test's image server. */
function withImages(brandPath: string, itemPaths: Array<string | undefined>) {
  return listingBody({
    brand: {
      displayName: { ar: 'مطعم الشاطئ', en: 'Beach Restaurant' },
      urlSafeName: 'beach-restaurant',
      imageUrl: images.url(brandPath),
    },
    items: itemPaths.map((path, i) => item(i, path === undefined ? {} : { imageUrl: images.url(path) })),
  })
}

const requestCount = () => images.requests.length

await describeEachDialect('images: checked before storing', (service) => {
  test('a listing with a png brand and jpg, gif and webp items is created', async () => {
    const provider = await service.newProvider()
    const response = await service.create(provider.token, withImages('/tiny.png', ['/tiny.jpg', '/tiny.gif', '/tiny.webp', undefined]))
    assert.equal(response.status, 201, response.text)
  })

  test('an SVG brand image is 415 unsupported-image-format at /brand/imageUrl; nothing stored, nothing reserved', async () => {
    const provider = await service.newProvider()
    const body = withImages('/as/svg/logo.png', ['/tiny.jpg'])
    const response = await service.create(provider.token, body)
    assert.equal(response.status, 415, response.text)
    assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/)
    assert.equal(response.body.type, '/problems/unsupported-image-format')
    assert.deepEqual(response.body.errors, [{ pointer: '/brand/imageUrl', detail: 'content is image/svg+xml; accepted: jpg, png, gif, webp' }])
    assert.equal((await service.list(provider.token)).body.recordCount, 0)

    body.brand.imageUrl = images.url('/tiny.png')
    assert.equal((await service.create(provider.token, body)).status, 201, 'the referenceId was not reserved')
  })

  test('a 6 MB item image is 413 image-too-large at its pointer, with its size and the limit', async () => {
    const provider = await service.newProvider()
    const response = await service.create(provider.token, withImages('/tiny.png', [undefined, '/size/6000000']))
    assert.equal(response.status, 413, response.text)
    assert.equal(response.body.type, '/problems/image-too-large')
    assert.deepEqual(response.body.errors, [{ pointer: '/items/1/imageUrl', detail: 'image is 6.0 MB; the limit is 5 MiB' }])
  })

  test('an image that cannot be fetched is 400 image-unavailable', async () => {
    const provider = await service.newProvider()
    const response = await service.create(provider.token, withImages('/status/404', [undefined]))
    assert.equal(response.status, 400, response.text)
    assert.equal(response.body.type, '/problems/image-unavailable')
    assert.equal(response.body.errors[0].pointer, '/brand/imageUrl')
    assert.match(response.body.errors[0].detail, /HTTP 404/)
  })

  test('several failures: the first in document order sets the status, errors[] names each', async () => {
    const provider = await service.newProvider()
    const body = withImages('/tiny.png', ['/tiny.jpg', '/status/500', undefined, '/as/pdf/menu.png', '/size/6000000'])
    const response = await service.create(provider.token, body)
    assert.equal(response.status, 400, response.text)
    assert.equal(response.body.type, '/problems/image-unavailable')
    assert.deepEqual(
      response.body.errors.map((e: { pointer: string }) => e.pointer),
      ['/items/1/imageUrl', '/items/3/imageUrl', '/items/4/imageUrl'],
    )
    assert.equal(response.body.detail, '3 images were not accepted')

    const tooLargeFirst = withImages('/tiny.png', ['/size/6000000', '/as/pdf/menu.png'])
    const second = await service.create(provider.token, tooLargeFirst)
    assert.equal(second.status, 413)
    assert.equal(second.body.errors.length, 2)
  })

  test('100 items sharing one image URL fetch it once', async () => {
    const provider = await service.newProvider()
    const path = `/img/shared-${service.dialect}.png`
    const body = withImages(
      '/tiny.png',
      Array.from({ length: 100 }, () => path),
    )
    assert.equal((await service.create(provider.token, body)).status, 201)
    assert.equal(images.requests.filter((r) => r.path === path).length, 1)
  })

  test('an invalid body fetches nothing', async () => {
    const provider = await service.newProvider()
    const body = withImages(`/img/never-${service.dialect}-1.png`, [`/img/never-${service.dialect}-2.png`])
    body.items[0].price = 0
    const before = requestCount()
    assert.equal((await service.create(provider.token, body)).status, 400)
    assert.equal(requestCount(), before)
  })

  test('an unauthenticated create fetches nothing', async () => {
    const body = withImages(`/img/never-${service.dialect}-3.png`, [undefined])
    const before = requestCount()
    assert.equal((await service.create('lst_' + 'A'.repeat(43), body)).status, 401)
    assert.equal(requestCount(), before)
  })

  test('a replayed referenceId fetches nothing, even after the image cache has expired', async () => {
    const provider = await service.newProvider()
    const body = withImages(`/img/replay-${service.dialect}.png`, [undefined])
    assert.equal((await service.create(provider.token, body)).status, 201)
    service.clock.now += 11 * 60 * 1000
    const before = requestCount()
    assert.equal((await service.create(provider.token, body)).status, 200)
    assert.equal(requestCount(), before)
  })
})

await describeEachDialect(
  'images: the default policy keeps callers out of our network',
  (service) => {
    test('a loopback image URL is 400 image-unavailable, and the image server records no request', async () => {
      const provider = await service.newProvider()
      const before = requestCount()
      const response = await service.create(provider.token, withImages('/tiny.png', ['/tiny.jpg']))
      assert.equal(response.status, 400, response.text)
      assert.equal(response.body.type, '/problems/image-unavailable')
      assert.deepEqual(
        response.body.errors.map((e: { pointer: string }) => e.pointer),
        ['/brand/imageUrl', '/items/0/imageUrl'],
      )
      assert.match(response.body.errors[0].detail, /does not resolve to a public address/)
      assert.equal(requestCount(), before)
    })

    test('the cloud metadata address is refused without contact', async () => {
      const provider = await service.newProvider()
      const body = withImages('/tiny.png', [undefined])
      body.brand.imageUrl = 'http://169.254.169.254/latest/meta-data/iam/security-credentials/'
      const response = await service.create(provider.token, body)
      assert.equal(response.status, 400)
      assert.equal(response.body.type, '/problems/image-unavailable')
    })
  },
  { env: { IMAGE_ALLOW_PRIVATE_NETWORKS: 'false' } },
)
