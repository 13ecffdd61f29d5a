import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { anyAddress, publicAddressesOnly, type AddressPolicy } from '../src/images/address-policy.js'
import { ImageProber, type ImageProberOptions, type ProbeResult } from '../src/images/prober.js'
import { Problem } from '../src/errors.js'
import { IMAGES, serveBytes, startImageServer, type ImageServer, type Route } from './image-server.js'
import { testClock } from './helper.js'

const MiB = 1024 * 1024
const LIMIT = 5 * MiB
const BUDGET_MS = 1000

let server: ImageServer
const probers: ImageProber[] = []

function prober(options: Partial<ImageProberOptions> = {}): ImageProber {
  const created = new ImageProber({ maxBytes: LIMIT, timeoutMs: BUDGET_MS, policy: anyAddress, ...options })
  probers.push(created)
  return created
}

/** Requests the fixture server received for `path` (with its query), counted since `since`. */
const requestsTo = (path: string, since = 0) => server.requests.slice(since).filter((r) => r.path === path).length

function assertFailure(result: ProbeResult, type: string, detail: RegExp): void {
  assert.equal(result.ok, false, JSON.stringify(result))
  if (result.ok) return
  assert.equal(result.type, type, result.detail)
  assert.match(result.detail, detail)
}

before(async () => {
  server = await startImageServer()
})
after(async () => {
  await Promise.all(probers.map((p) => p.close()))
  await server.close()
})

describe('image prober: format by content', () => {
  for (const [path, format] of [
    ['/tiny.png', 'png'],
    ['/tiny.jpg', 'jpeg'],
    ['/tiny.gif', 'gif'],
    ['/tiny.webp', 'webp'],
    ['/as/png/photo.jpg', 'png'],
    ['/as/jpg/image.gif', 'jpeg'],
    ['/as/webp/no-extension', 'webp'],
  ] as const) {
    test(`${path} is a ${format}, whatever the name says`, async () => {
      const result = await prober().probe(server.url(path))
      assert.deepEqual(result.ok && result.format, format)
    })
  }

  for (const [path, content] of [
    ['/text/photo.png', /not a recognised image/],
    ['/as/svg/logo.png', /image\/svg\+xml/],
    ['/as/pdf/menu.jpg', /application\/pdf/],
    ['/as/bmp/logo.png', /image\/bmp/],
    ['/as/avif/logo.webp', /image\/avif/],
    ['/as/tiff/logo.png', /image\/tiff/],
    ['/as/html/logo.png', /text\/html/],
  ] as const) {
    test(`${path} is refused as ${content.source} (415), and says what is accepted`, async () => {
      const result = await prober().probe(server.url(path))
      assertFailure(result, 'unsupported-image-format', content)
      assertFailure(result, 'unsupported-image-format', /accepted: jpg, png, gif, webp/)
    })
  }

  test('an empty body is not an image', async () => {
    const empty = await startImageServer('127.0.0.1', { '/empty.png': (_q, response) => response.end() })
    try {
      assertFailure(await prober().probe(empty.url('/empty.png')), 'unsupported-image-format', /empty/)
    } finally {
      await empty.close()
    }
  })
})

describe('image prober: size by full length', () => {
  const variants = [
    ['with Range support', ''],
    ['without Range support', '?ranges=off'],
    ['chunked, no Content-Length', '?ranges=off&length=off'],
    ['Range support but an unknown total', '?total=off'],
  ] as const

  for (const [name, query] of variants) {
    test(`exactly IMAGE_MAX_BYTES is accepted (${name})`, async () => {
      const result = await prober().probe(server.url(`/size/${LIMIT}${query}`))
      assert.deepEqual(result, { ok: true, format: 'png', bytes: LIMIT })
    })

    test(`one byte over IMAGE_MAX_BYTES is 413 (${name})`, async () => {
      assertFailure(await prober().probe(server.url(`/size/${LIMIT + 1}${query}`)), 'image-too-large', /5 MiB/)
    })

    test(`a 6 MB image is 413 (${name})`, async () => {
      assertFailure(await prober().probe(server.url(`/size/6000000${query}`)), 'image-too-large', /5 MiB/)
    })
  }

  test('a 206 total over the limit is refused from the first, small response alone', async () => {
    const since = server.requests.length
    const result = await prober().probe(server.url('/size/6000000'))
    assertFailure(result, 'image-too-large', /^image is 6\.0 MB; the limit is 5 MiB$/)
    assert.deepEqual(
      server.requests.slice(since).map((r) => r.range),
      ['bytes=0-4095'],
    )
  })

  test('a Content-Length over the limit gives the size in the message', async () => {
    const result = await prober().probe(server.url('/size/6000000?ranges=off'))
    assertFailure(result, 'image-too-large', /^image is 6\.0 MB; the limit is 5 MiB$/)
  })

  test('a 206 total within the limit is not trusted alone: the whole image is fetched and counted', async () => {
    const since = server.requests.length
    const result = await prober().probe(server.url('/size/100000'))
    assert.deepEqual(result, { ok: true, format: 'png', bytes: 100_000 })
    assert.deepEqual(
      server.requests.slice(since).map((r) => r.range),
      ['bytes=0-4095', undefined],
    )
  })

  test('a server that lies with a small Content-Range total is caught by counting', async () => {
    const liar = await startImageServer('127.0.0.1', {
      '/liar.png': (request, response) => {
        if (request.headers.range) {
          response.writeHead(206, { 'content-range': 'bytes 0-4095/5000', 'content-length': 4096 })
          response.end(Buffer.concat([IMAGES.png, Buffer.alloc(4096 - IMAGES.png.length)]))
        } else {
          serveBytes(request, response, Buffer.concat([IMAGES.png, Buffer.alloc(6 * MiB)]), { length: false })
        }
      },
    })
    try {
      assertFailure(await prober().probe(liar.url('/liar.png')), 'image-too-large', /larger than 5 MiB/)
    } finally {
      await liar.close()
    }
  })

  test('a small image served whole in the first range answer takes one request', async () => {
    const since = server.requests.length
    assert.equal((await prober().probe(server.url('/tiny.webp'))).ok, true)
    assert.equal(server.requests.length - since, 1)
  })

  test('the limit is IMAGE_MAX_BYTES, not a constant', async () => {
    const small = prober({ maxBytes: 1000 })
    assert.equal((await small.probe(server.url('/size/1000?ranges=off'))).ok, true)
    assertFailure(await small.probe(server.url('/size/1001?ranges=off')), 'image-too-large', /1000 bytes/)
  })
})

describe('image prober: not fetchable → image-unavailable', () => {
  for (const code of [404, 410, 500, 503]) {
    test(`HTTP ${code}`, async () => {
      assertFailure(await prober().probe(server.url(`/status/${code}`)), 'image-unavailable', new RegExp(`HTTP ${code}`))
    })
  }

  test('3 redirects are followed; a 4th is refused; a loop is refused', async () => {
    assert.equal((await prober().probe(server.url('/redirect/3'))).ok, true)
    assertFailure(await prober().probe(server.url('/redirect/4')), 'image-unavailable', /more than 3 redirects/)
    assertFailure(await prober().probe(server.url('/loop')), 'image-unavailable', /more than 3 redirects/)
  })

  test('a redirect to a non-http scheme or to a URL with credentials is refused', async () => {
    const toFile = server.url(`/to?url=${encodeURIComponent('file:///etc/passwd')}`)
    assertFailure(await prober().probe(toFile), 'image-unavailable', /file:/)
    const withCredentials = server.url(`/to?url=${encodeURIComponent(server.url('/tiny.png').replace('://', '://user:pw@'))}`)
    assertFailure(await prober().probe(withCredentials), 'image-unavailable', /credentials/)
  })

  for (const path of ['/drip', '/hang']) {
    test(`${path}: fails within the budget`, async () => {
      const started = Date.now()
      assertFailure(await prober().probe(server.url(path)), 'image-unavailable', /within 1000 ms/)
      const elapsed = Date.now() - started
      assert.ok(elapsed >= BUDGET_MS - 50 && elapsed < BUDGET_MS + 500, `took ${elapsed} ms`)
    })
  }

  test('the budget covers the whole probe, redirects and body included', async () => {
    // Each hop is quick, but the last one drips: the one budget still ends it.
    const started = Date.now()
    const url = server.url(`/to?url=${encodeURIComponent(server.url('/drip'))}`)
    assertFailure(await prober().probe(url), 'image-unavailable', /within/)
    assert.ok(Date.now() - started < BUDGET_MS + 500)
  })

  test('connection refused', async () => {
    const closed = await startImageServer()
    const url = closed.url('/tiny.png')
    await closed.close()
    assertFailure(await prober().probe(url), 'image-unavailable', /refused/)
  })

  test('a host that does not resolve', async () => {
    const noDns = prober({ resolve: async () => Promise.reject(new Error('ENOTFOUND')) })
    assertFailure(await noDns.probe('http://images.invalid/a.png'), 'image-unavailable', /^images\.invalid does not resolve to a public address/)
  })
})

describe('image prober: no way into our network (SSRF)', () => {
  let other: ImageServer
  before(async () => {
    // A second server on another loopback address, standing for an internal host.
    other = await startImageServer('127.0.0.2')
  })
  after(async () => {
    await other.close()
  })
  /** Public addresses plus 127.0.0.1 only: the fixture server is reachable, 127.0.0.2 stands for the inside. */
  const onlyFixture: AddressPolicy = (address) => address === '127.0.0.1' || publicAddressesOnly(address)

  test('probing for internal names: one that resolves privately reads to the caller as one that does not resolve; only the log tells them apart', async () => {
    const logged: string[] = []
    const probe = prober({
      policy: publicAddressesOnly,
      resolve: async (host) => (host === 'billing.internal' ? ['10.0.0.5'] : Promise.reject(new Error('ENOTFOUND'))),
      onRefusedHost: (detail) => logged.push(detail),
    })
    const internal = await probe.probe('http://billing.internal/a.png')
    const missing = await probe.probe('http://nothing.internal/a.png')
    assert.ok(!internal.ok && !missing.ok)
    assert.equal(internal.detail.replace('billing', 'X'), missing.detail.replace('nothing', 'X'))
    assert.equal(logged.length, 2)
    assert.notEqual(logged[0]?.replace('billing', 'X'), logged[1]?.replace('nothing', 'X'))
  })

  test('with the default policy, a loopback URL is refused and the server records no request', async () => {
    const since = server.requests.length
    const result = await prober({ policy: publicAddressesOnly }).probe(server.url('/tiny.png'))
    assertFailure(result, 'image-unavailable', /does not resolve to a public address/)
    assert.equal(server.requests.length, since)
  })

  test('with the default policy, "localhost" (resolved by the system) is refused before connecting', async () => {
    const since = server.requests.length
    const url = server.url('/tiny.png').replace('127.0.0.1', 'localhost')
    assertFailure(await prober({ policy: publicAddressesOnly }).probe(url), 'image-unavailable', /does not resolve to a public address/)
    assert.equal(server.requests.length, since)
  })

  test('with the default policy, every spelling of loopback is refused without contact', async () => {
    const port = new URL(server.baseUrl).port
    const since = server.requests.length
    for (const host of ['2130706433', '0x7f000001', '0177.0.0.1', '127.1', '[::ffff:127.0.0.1]', '[::1]', '0.0.0.0', '[::]']) {
      const result = await prober({ policy: publicAddressesOnly }).probe(`http://${host}:${port}/tiny.png`)
      assertFailure(result, 'image-unavailable', /does not resolve to a public address/)
    }
    assert.equal(server.requests.length, since)
  })

  test('a redirect to a forbidden address is refused, and that address is never contacted', async () => {
    const target = other.url('/tiny.png')
    const result = await prober({ policy: onlyFixture }).probe(server.url(`/to?url=${encodeURIComponent(target)}`))
    assertFailure(result, 'image-unavailable', /does not resolve to a public address/)
    assert.equal(other.requests.length, 0)
  })

  test('a name resolving to a forbidden address (DNS rebinding) is refused at connect time, never contacted', async () => {
    const port = new URL(other.baseUrl).port
    const rebinding = prober({ policy: onlyFixture, resolve: async () => ['127.0.0.2'] })
    assertFailure(await rebinding.probe(`http://rebind.test:${port}/tiny.png`), 'image-unavailable', /does not resolve to a public address/)
    assert.equal(other.requests.length, 0)
  })

  test('of several resolved addresses, only an allowed one is connected to', async () => {
    const port = new URL(server.baseUrl).port
    const since = server.requests.length
    const mixed = prober({ policy: onlyFixture, resolve: async () => ['127.0.0.2', '127.0.0.1'] })
    assert.equal((await mixed.probe(`http://mixed.test:${port}/tiny.png`)).ok, true)
    assert.equal(server.requests.length, since + 1)
    assert.equal(other.requests.length, 0)
  })
})

describe('image prober: sharing, caching and bounds', () => {
  test('100 items sharing one URL are fetched once', async () => {
    const p = prober()
    const path = '/img/shared-by-100.png'
    const images = Array.from({ length: 100 }, (_, i) => ({ pointer: `/items/${i}/imageUrl`, url: server.url(path) }))
    await p.check(images)
    assert.equal(requestsTo(path), 1)
  })

  test('a success is reused for 10 minutes, then fetched again; a failure is not reused', async () => {
    const clock = testClock()
    const p = prober({ clock })
    const path = '/img/cached.png'
    await p.probe(server.url(path))
    // lru-cache's boundary: an entry is stale once older than its ttl, so at exactly 10 minutes it is still reused.
    clock.now += 10 * 60 * 1000
    await p.probe(server.url(path))
    assert.equal(requestsTo(path), 1)
    clock.now += 1
    await p.probe(server.url(path))
    assert.equal(requestsTo(path), 2)

    await p.probe(server.url('/status/404?failure-not-cached'))
    await p.probe(server.url('/status/404?failure-not-cached'))
    assert.equal(requestsTo('/status/404?failure-not-cached'), 2)
  })

  test('concurrent probes of one URL share one fetch', async () => {
    const p = prober()
    const path = '/img/concurrent.png'
    await Promise.all(Array.from({ length: 20 }, () => p.probe(server.url(path))))
    assert.equal(requestsTo(path), 1)
  })

  test('probes of one request run concurrently, at most perRequestConcurrency at a time', async () => {
    let running = 0
    let peak = 0
    const p = prober({ perRequestConcurrency: 4 })
    // Each image takes 100 ms to answer; 12 of them.
    const slowImage: Route = (request, response) => {
      running += 1
      peak = Math.max(peak, running)
      void sleep(100).then(() => {
        running -= 1
        serveBytes(request, response, IMAGES.png)
      })
    }
    const routes = await startImageServer('127.0.0.1', Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`/slow/${i}.png`, slowImage])))
    try {
      const started = Date.now()
      await p.check(Array.from({ length: 12 }, (_, i) => ({ pointer: `/items/${i}/imageUrl`, url: routes.url(`/slow/${i}.png`) })))
      assert.equal(peak, 4)
      const elapsed = Date.now() - started
      assert.ok(elapsed >= 300 && elapsed < 1000, `3 waves of 100 ms took ${elapsed} ms`)
    } finally {
      await routes.close()
    }
  })

  test("a provider naming another's image URL cannot hold that provider's create behind its own line", async () => {
    // 4 fetches: one provider may hold 3 (fair-slots.ts).
    const p = prober({ processConcurrency: 4, timeoutMs: 10_000 })
    const shared = server.url('/img/victims-own-brand.png')
    const attackerGone = new AbortController()
    const attack = p
      .check(
        [
          ...[0, 1, 2].map((i) => ({ pointer: `/items/${i}/imageUrl`, url: server.url(`/hang/takes-a-slot-${i}`) })),
          { pointer: '/items/3/imageUrl', url: shared },
        ],
        { provider: 'attacker', clientGone: () => attackerGone.signal },
      )
      .then(
        () => 'attacker answered',
        () => 'attacker answered',
      )
    try {
      // The attacker's share is taken; the shared URL's probe waits in the attacker's line.
      while (server.requests.filter((r) => r.path.startsWith('/hang/takes-a-slot-')).length < 3) await sleep(10)
      const victim = p.check([{ pointer: '/brand/imageUrl', url: shared }], { provider: 'victim' }).then(() => 'victim answered')
      assert.equal(await Promise.race([victim, attack]), 'victim answered')
      assert.equal(requestsTo('/img/victims-own-brand.png'), 1)
    } finally {
      attackerGone.abort()
      await attack
    }
  })

  test('check(): the first failing image in document order sets the status; errors[] lists every failure', async () => {
    const p = prober()
    const images = [
      { pointer: '/brand/imageUrl', url: server.url('/tiny.png') },
      { pointer: '/items/0/imageUrl', url: server.url('/tiny.jpg') },
      { pointer: '/items/1/imageUrl', url: server.url('/as/svg/x.png') },
      { pointer: '/items/2/imageUrl', url: server.url('/status/404') },
      { pointer: '/items/3/imageUrl', url: server.url('/size/6000000') },
      { pointer: '/items/4/imageUrl', url: server.url('/as/svg/x.png') },
    ]
    const error = await p.check(images).then(
      () => assert.fail('expected a problem'),
      (e: unknown) => e,
    )
    assert.ok(error instanceof Problem)
    assert.equal(error.type, 'unsupported-image-format')
    assert.equal(error.status, 415)
    assert.deepEqual(
      error.errors?.map((e) => e.pointer),
      ['/items/1/imageUrl', '/items/2/imageUrl', '/items/3/imageUrl', '/items/4/imageUrl'],
    )
    assert.match(error.errors?.[2]?.detail ?? '', /6\.0 MB/)
  })
})
