import assert from 'node:assert/strict'
import { test } from 'node:test'
import { fixtureImages, item, listingBody, setAt } from './fixtures.js'
import { describeEachDialect } from './helper.js'

/** One rule of docs/api.md#create-a-listing or the interface document: a change to a valid body, and the problem it must cause. */
interface Rule {
  name: string
  pointer: string
  value: unknown
  detail: RegExp
  /** Where the problem is reported, when not at `pointer` itself. */
  reportedAt?: string
}

const absent = undefined
const long = (n: number, unit = 'a') => unit.repeat(n)

const invalid: Rule[] = [
  // Required fields, at every level.
  ...[
    '/referenceId',
    '/location',
    '/location/latitude',
    '/location/longitude',
    '/brand',
    '/brand/displayName',
    '/brand/displayName/ar',
    '/brand/displayName/en',
    '/brand/urlSafeName',
    '/brand/imageUrl',
    '/listingDetails',
    '/listingDetails/discountRate',
    '/items',
    '/items/0/displayName',
    '/items/0/displayName/ar',
    '/items/0/displayName/en',
    '/items/0/urlSafeName',
    '/items/0/category',
    '/items/0/subCategory',
    '/items/0/price',
  ].map((pointer) => ({ name: `missing ${pointer}`, pointer, value: absent, detail: /required/ })),

  // Unknown fields anywhere.
  ...['/extra', '/location/altitude', '/brand/logo', '/brand/displayName/fr', '/listingDetails/note', '/items/0/sku'].map((pointer) => ({
    name: `unknown ${pointer}`,
    pointer,
    value: 1,
    detail: /not an accepted field/,
  })),

  // No coercion: a number in a string is not a number, "true" is not a boolean.
  { name: 'price as a string', pointer: '/items/0/price', value: '25', detail: /must be a number/ },
  { name: 'quantity as a string', pointer: '/items/0/quantity', value: '2', detail: /must be an integer/ },
  { name: 'latitude as a string', pointer: '/location/latitude', value: '24.7', detail: /must be a number/ },
  { name: 'discountRate as a string', pointer: '/listingDetails/discountRate', value: '0.5', detail: /must be a number/ },
  { name: 'isAssignedToDriver "true"', pointer: '/listingDetails/isAssignedToDriver', value: 'true', detail: /must be a boolean/ },
  { name: 'isAssignedToDriver 1', pointer: '/listingDetails/isAssignedToDriver', value: 1, detail: /must be a boolean/ },
  { name: 'referenceId as a number', pointer: '/referenceId', value: 42, detail: /must be a string/ },
  { name: 'items as an object', pointer: '/items', value: { 0: item() }, detail: /must be an array/ },
  { name: 'location as an array', pointer: '/location', value: [24, 46], detail: /must be an object/ },
  { name: 'null name', pointer: '/brand/displayName/en', value: null, detail: /must be a string/ },

  // referenceId: 1–255 characters.
  { name: 'empty referenceId', pointer: '/referenceId', value: '', detail: /empty/ },
  { name: '256-character referenceId', pointer: '/referenceId', value: long(256), detail: /at most 255/ },

  // Coordinates.
  { name: 'latitude above 90', pointer: '/location/latitude', value: 90.000001, detail: /<= 90/ },
  { name: 'latitude below -90', pointer: '/location/latitude', value: -90.5, detail: />= -90/ },
  { name: 'longitude above 180', pointer: '/location/longitude', value: 180.5, detail: /<= 180/ },
  { name: 'longitude below -180', pointer: '/location/longitude', value: -181, detail: />= -180/ },

  // Names: non-empty means a non-whitespace character; at most 200 characters; storable text.
  { name: 'blank brand name', pointer: '/brand/displayName/ar', value: '   ', detail: /non-whitespace/ },
  { name: 'tab-and-newline item name', pointer: '/items/0/displayName/en', value: '\t\n', detail: /non-whitespace/ },
  { name: 'empty item name', pointer: '/items/0/displayName/ar', value: '', detail: /empty/ },
  { name: '201-character name', pointer: '/brand/displayName/en', value: long(201), detail: /at most 200/ },
  { name: 'NUL in a name', pointer: '/brand/displayName/en', value: 'Bake\u0000ry', detail: /NUL/ },
  { name: 'lone surrogate in a name', pointer: '/items/0/displayName/en', value: 'Bad \ud800 text', detail: /Unicode/ },
  { name: 'NUL in referenceId', pointer: '/referenceId', value: 'ref\u0000', detail: /NUL/ },

  // urlSafeName: 1–100 RFC 3986 unreserved characters.
  { name: 'urlSafeName with a space', pointer: '/brand/urlSafeName', value: 'morning bakery', detail: /pattern/ },
  { name: 'urlSafeName with a slash', pointer: '/items/0/urlSafeName', value: 'a/b', detail: /pattern/ },
  { name: 'urlSafeName with Arabic', pointer: '/items/0/urlSafeName', value: 'خبز', detail: /pattern/ },
  { name: 'urlSafeName with an accent', pointer: '/brand/urlSafeName', value: 'café', detail: /pattern/ },
  { name: 'empty urlSafeName', pointer: '/brand/urlSafeName', value: '', detail: /empty/ },
  { name: '101-character urlSafeName', pointer: '/brand/urlSafeName', value: long(101), detail: /at most 100/ },

  // imageUrl: absolute http(s), at most 2048 characters.
  { name: 'ftp imageUrl', pointer: '/brand/imageUrl', value: 'ftp://example.com/a.png', detail: /http or https/ },
  { name: 'relative imageUrl', pointer: '/brand/imageUrl', value: '/images/a.png', detail: /http or https/ },
  { name: 'javascript: imageUrl', pointer: '/items/0/imageUrl', value: 'javascript:alert(1)', detail: /http or https/ },
  { name: 'hostless imageUrl', pointer: '/items/0/imageUrl', value: 'http://', detail: /http or https/ },
  { name: 'imageUrl with credentials', pointer: '/brand/imageUrl', value: 'https://user:pw@example.com/a.png', detail: /password/ },
  { name: 'imageUrl with a user name', pointer: '/items/0/imageUrl', value: 'http://admin@example.com/a.png', detail: /user name/ },
  {
    name: '2049-character imageUrl',
    pointer: '/brand/imageUrl',
    value: `https://example.com/${long(2049 - 20)}`,
    detail: /at most 2048/,
  },

  // listingDetails.
  { name: 'discountRate below 0.1', pointer: '/listingDetails/discountRate', value: 0.09, detail: />= 0.1/ },
  { name: 'discountRate above 1', pointer: '/listingDetails/discountRate', value: 1.01, detail: /<= 1/ },
  { name: 'discountRate 0', pointer: '/listingDetails/discountRate', value: 0, detail: />= 0.1/ },
  { name: 'unknown type', pointer: '/listingDetails/type', value: 'weekly', detail: /timed, priority_timed/ },

  // Items.
  { name: 'no items', pointer: '/items', value: [], detail: /at least 1 item/ },
  { name: '101 items', pointer: '/items', value: Array.from({ length: 101 }, (_, i) => item(i)), detail: /at most 100/ },
  { name: 'unknown category', pointer: '/items/0/category', value: 'food', detail: /service, product, tax/ },
  { name: 'unknown subCategory', pointer: '/items/0/subCategory', value: 'dessert', detail: /delivery, main_dish/ },
  { name: 'price below 1', pointer: '/items/0/price', value: 0.999, detail: />= 1/ },
  { name: 'price 0', pointer: '/items/0/price', value: 0, detail: />= 1/ },
  { name: 'negative price', pointer: '/items/0/price', value: -5, detail: />= 1/ },
  { name: 'price above 1,000,000,000', pointer: '/items/0/price', value: 1_000_000_000.001, detail: /<= 1000000000/ },
  { name: 'price with 4 decimals', pointer: '/items/0/price', value: 19.9999, detail: /3 decimal places/ },
  { name: 'price 1.0001', pointer: '/items/0/price', value: 1.0001, detail: /3 decimal places/ },
  { name: 'quantity 0', pointer: '/items/0/quantity', value: 0, detail: />= 1/ },
  { name: 'quantity 1.5', pointer: '/items/0/quantity', value: 1.5, detail: /must be an integer/ },
  { name: 'quantity above 1,000,000', pointer: '/items/0/quantity', value: 1_000_001, detail: /<= 1000000/ },
]

/** Values at the edge of every range: all must be accepted. */
const accepted: Array<{ name: string; pointer: string; value: unknown }> = [
  { name: 'latitude 90', pointer: '/location/latitude', value: 90 },
  { name: 'latitude -90', pointer: '/location/latitude', value: -90 },
  { name: 'longitude 180', pointer: '/location/longitude', value: 180 },
  { name: 'longitude -180', pointer: '/location/longitude', value: -180 },
  { name: 'discountRate 0.1', pointer: '/listingDetails/discountRate', value: 0.1 },
  { name: 'discountRate 1', pointer: '/listingDetails/discountRate', value: 1 },
  { name: 'price 1', pointer: '/items/0/price', value: 1 },
  { name: 'price 1,000,000,000', pointer: '/items/0/price', value: 1_000_000_000 },
  { name: 'price 999,999,999.999', pointer: '/items/0/price', value: 999_999_999.999 },
  { name: 'quantity 1,000,000', pointer: '/items/0/quantity', value: 1_000_000 },
  { name: '255-character referenceId', pointer: '/referenceId', value: `r${long(254)}` },
  { name: '200-character name', pointer: '/brand/displayName/en', value: long(200) },
  { name: '200 emoji as a name (characters, not UTF-16 units)', pointer: '/brand/displayName/ar', value: long(200, '🥐') },
  { name: 'every unreserved character', pointer: '/brand/urlSafeName', value: 'AZaz09-._~' },
  { name: '100-character urlSafeName', pointer: '/items/0/urlSafeName', value: long(100) },
  {
    name: '2048-character imageUrl',
    pointer: '/brand/imageUrl',
    value: fixtureImages.url(`/img/${long(2048 - fixtureImages.url('/img/').length)}`),
  },
  { name: 'imageUrl on an item, with a query', pointer: '/items/0/imageUrl', value: fixtureImages.url('/img/i.webp?size=2') },
  { name: 'priority_timed', pointer: '/listingDetails/type', value: 'priority_timed' },
  { name: 'no type', pointer: '/listingDetails/type', value: absent },
  { name: 'no isAssignedToDriver', pointer: '/listingDetails/isAssignedToDriver', value: absent },
  { name: 'no quantity', pointer: '/items/0/quantity', value: absent },
  { name: '100 items', pointer: '/items', value: Array.from({ length: 100 }, (_, i) => item(i)) },
  { name: 'name with surrounding spaces', pointer: '/items/0/displayName/en', value: '  Tea  ' },
]

await describeEachDialect('create: validation', (service) => {
  for (const rule of invalid) {
    test(`refuses ${rule.name}`, async () => {
      const provider = await service.newProvider()
      const body = listingBody()
      setAt(body, rule.pointer, rule.value)
      const response = await service.create(provider.token, body)

      assert.equal(response.status, 400, response.text)
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/)
      assert.equal(response.body.type, '/problems/invalid-request')
      assert.equal(response.body.success, false)
      const problems = response.body.errors as Array<{ pointer: string; detail: string }>
      const found = problems.find((p) => p.pointer === (rule.reportedAt ?? rule.pointer))
      assert.ok(found, `no problem at ${rule.pointer}: ${response.text}`)
      assert.match(found.detail, rule.detail)
      // Nothing else is wrong with the body, so nothing else is reported.
      assert.equal(problems.length, 1, response.text)
      // A refused body stores nothing.
      assert.equal((await service.list(provider.token)).body.recordCount, 0)
    })
  }

  for (const edge of accepted) {
    test(`accepts ${edge.name}`, async () => {
      const provider = await service.newProvider()
      const body = listingBody()
      setAt(body, edge.pointer, edge.value)
      const response = await service.create(provider.token, body)
      assert.equal(response.status, 201, response.text)
    })
  }

  test('reports every problem at once, each with its pointer', async () => {
    const provider = await service.newProvider()
    const body = listingBody({}, 5)
    body.referenceId = ''
    body.location.latitude = 91
    body.brand.urlSafeName = 'no spaces allowed'
    body.listingDetails.discountRate = 2
    body.listingDetails.colour = 'red'
    body.items[1].price = 0
    body.items[3].price = '19.99'
    delete body.items[4].category
    const response = await service.create(provider.token, body)

    assert.equal(response.status, 400)
    const pointers = (response.body.errors as Array<{ pointer: string }>).map((p) => p.pointer).sort()
    assert.deepEqual(pointers, [
      '/brand/urlSafeName',
      '/items/1/price',
      '/items/3/price',
      '/items/4/category',
      '/listingDetails/colour',
      '/listingDetails/discountRate',
      '/location/latitude',
      '/referenceId',
    ])
    assert.equal(response.body.detail, '8 fields are invalid')
    assert.equal(response.body.status, 400)
    assert.equal(response.body.title, 'Invalid request')
  })

  test('escapes "/" and "~" in the pointer of an unknown field (RFC 6901)', async () => {
    const provider = await service.newProvider()
    const body = listingBody()
    body.brand['a/b~c'] = 1
    const response = await service.create(provider.token, body)
    assert.equal(response.status, 400)
    assert.deepEqual(
      response.body.errors.map((p: { pointer: string }) => p.pointer),
      ['/brand/a~1b~0c'],
    )
  })

  test('a body that is not an object is refused at the root pointer', async () => {
    const provider = await service.newProvider()
    for (const body of [[], 'listing', 42, true]) {
      const response = await service.create(provider.token, body)
      assert.equal(response.status, 400, JSON.stringify(body))
      assert.equal(response.body.errors[0].pointer, '', response.text)
    }
  })
})
