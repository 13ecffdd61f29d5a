import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { schemaModules } from '../console/build.js'
import type { Issue, Schema } from '../console/src/validate.js'
import { listingBody, setAt } from './fixtures.js'
import { startService, type TestProvider, type TestService } from './helper.js'

// The console checks a body before sending it with validators console/build.ts generates from the API's own JSON
// Schema (Ajv standalone). Differential test: for each body, the fields the console points at are exactly the
// fields the service's 400 points at. What runs here is bundled as the console's is.

const bundled = await build({
  stdin: {
    contents: [
      "export { validate } from './console/src/validate'",
      "export { default as createListing } from 'schema:create-listing'",
      "export { default as patchListing } from 'schema:patch-listing'",
    ].join('\n'),
    resolveDir: fileURLToPath(new URL('..', import.meta.url)),
    loader: 'ts',
  },
  bundle: true,
  format: 'esm',
  write: false,
  logLevel: 'warning',
  plugins: [schemaModules],
})
const consoleChecks = (await import(`data:text/javascript;base64,${Buffer.from(bundled.outputFiles[0]?.text ?? '').toString('base64')}`)) as {
  validate: (schema: Schema, value: unknown) => Issue[]
  createListing: Schema
  patchListing: Schema
}
const { validate } = consoleChecks

/** Changes to a valid body, each breaking (or not) one or more rules. */
const changes: Array<[string, Array<[string, unknown]>]> = [
  ['valid as it is', []],
  ['price below 1', [['/items/0/price', 0]]],
  ['price with 4 decimals', [['/items/0/price', 1.0001]]],
  ['price 19.99 (exact decimal)', [['/items/0/price', 19.99]]],
  ['price as text', [['/items/0/price', '5']]],
  [
    'quantity 0 and fractional',
    [
      ['/items/0/quantity', 0],
      ['/items/1/quantity', 1.5],
    ],
  ],
  ['discount out of range', [['/listingDetails/discountRate', 0.05]]],
  ['discount above 1', [['/listingDetails/discountRate', 1.5]]],
  ['unknown type', [['/listingDetails/type', 'weekly']]],
  ['driver as text', [['/listingDetails/isAssignedToDriver', 'true']]],
  [
    'web name with a space, and empty',
    [
      ['/brand/urlSafeName', 'a b'],
      ['/items/0/urlSafeName', ''],
    ],
  ],
  [
    'names of spaces only, and too long',
    [
      ['/brand/displayName/ar', '   '],
      ['/items/1/displayName/en', 'x'.repeat(201)],
    ],
  ],
  [
    'image URLs: not http, with a password',
    [
      ['/brand/imageUrl', 'ftp://example.com/a.png'],
      ['/items/0/imageUrl', 'http://u:p@example.com/a.png'],
    ],
  ],
  [
    'an unknown field, a missing one',
    [
      ['/brand/colour', 'red'],
      ['/location/latitude', undefined],
    ],
  ],
  [
    'latitude and longitude out of range',
    [
      ['/location/latitude', 91],
      ['/location/longitude', -181],
    ],
  ],
  [
    'empty reference, NUL in a name',
    [
      ['/referenceId', ''],
      ['/items/0/displayName/ar', 'a\u0000b'],
    ],
  ],
  [
    'unknown category and subcategory',
    [
      ['/items/1/category', 'food'],
      ['/items/1/subCategory', 'dessert'],
    ],
  ],
  ['brand not an object', [['/brand', 'Morning Bakery']]],
  ['no items', [['/items', []]]],
  ['101 items', [['/items', Array.from({ length: 101 }, () => listingBody().items[0])]]],
]

describe('console checks = service checks (create and change bodies)', { timeout: 60_000 }, () => {
  const service = {} as TestService
  let provider: TestProvider
  before(async () => {
    Object.assign(service, await startService('sqlite'))
    provider = await service.newProvider()
  })
  after(async () => service.close?.())

  for (const [name, edits] of changes) {
    test(`create: ${name}`, async () => {
      const body = listingBody({}, 2)
      for (const [pointer, value] of edits) setAt(body, pointer, value)
      const checked = validate(consoleChecks.createListing, body).map((issue) => issue.pointer)
      const response = await service.create(provider.token, body)
      const server = response.status === 400 ? (response.body.errors as Array<{ pointer: string }>).map((e) => e.pointer) : []
      if (server.length === 0) assert.equal(response.status, 201, response.text)
      assert.deepEqual([...checked].sort(), [...server].sort())
    })
  }

  test('change: the same pointers as the service for a bad PATCH body', async () => {
    const created = await service.create(provider.token, listingBody({}, 2))
    const bodies = [
      {
        listingDetails: { discountRate: 2 },
        items: [
          { position: 0, quantity: -1 },
          { position: 1, price: 0.5 },
        ],
      },
      { items: [{ position: 100, quantity: 1 }], extra: true },
      { items: [{ position: 0, quantity: 3, price: 9.25 }] },
    ]
    for (const body of bodies) {
      const checked = validate(consoleChecks.patchListing, body).map((issue) => issue.pointer)
      const response = await service.request('PATCH', `/api/v1/listing/${created.body.listingId}`, { token: provider.token, json: body })
      const server = response.status === 400 ? (response.body.errors as Array<{ pointer: string }>).map((e) => e.pointer) : []
      if (server.length === 0) assert.equal(response.status, 200, response.text)
      assert.deepEqual([...checked].sort(), [...server].sort(), JSON.stringify(body))
    }
  })
})
