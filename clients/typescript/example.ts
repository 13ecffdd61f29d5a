/**
 * The README's walk-through, in TypeScript: create a listing, change it, withdraw it, read its events; with a
 * marketplace's token, the marketplace holds units of it and confirms the hold before it is withdrawn.
 *
 *   TOKEN=lst_… npx tsx clients/typescript/example.ts
 *
 * TOKEN    required: a provider's token (npm start prints the demo provider's on its first start).
 * MARKETPLACE_TOKEN a marketplace's token (`node dist/cli/main.js marketplace create --name …`); without it the
 *          reservation is left out.
 * BASE_URL where the service is; default http://127.0.0.1:3000.
 * IMAGE_URL an image the service can fetch; default http://127.0.0.1:8001/tiny.png, which
 *          `node scripts/demo-server.mjs` serves. The service refuses loopback images unless it runs with
 *          IMAGE_ALLOW_PRIVATE_NETWORKS=true (for the demo only). docs/api.md#the-typescript-client says more.
 */
import { createListingClient, ProblemError, unwrap, type ListingClient } from './index.js'

function fail(message: string): never {
  console.error(`example.ts: ${message}`)
  process.exit(2)
}

const token = process.env.TOKEN
if (!token) fail('set TOKEN to a provider token (lst_…), e.g. TOKEN=lst_… npx tsx clients/typescript/example.ts')
const marketplaceToken = process.env.MARKETPLACE_TOKEN
const baseUrl = process.env.BASE_URL || 'http://127.0.0.1:3000'
const imageUrl = process.env.IMAGE_URL || 'http://127.0.0.1:8001/tiny.png'
try {
  new URL(baseUrl)
  new URL(imageUrl)
} catch {
  fail(`BASE_URL (${baseUrl}) and IMAGE_URL (${imageUrl}) must be absolute URLs`)
}

const client = createListingClient({ baseUrl, token })

/** The types of the events of `id` (a listing or a reservation) in a feed: oldest first, a page at a time, following nextCursor until it is null (nothing newer yet). */
async function eventsOf(feed: ListingClient, id: string): Promise<string[]> {
  const types: string[] = []
  for (let after: string | undefined; ;) {
    const page = await unwrap(feed.GET('/api/v1/events', { params: { query: { limit: 100, ...(after ? { after } : {}) } } }))
    types.push(...page.data.filter((event) => event.data.id === id).map((event) => event.type))
    if (page.nextCursor === null) return types
    after = page.nextCursor
  }
}

// Fails early with a plain message when nothing answers at BASE_URL, instead of a fetch stack trace.
await fetch(new URL('/healthz', baseUrl)).catch(() => fail(`nothing answers at ${baseUrl}: start the service (npm start) or set BASE_URL`))

const created = await unwrap(
  client.POST('/api/v1/listing/create', {
    body: {
      referenceId: `order-${Date.now()}`,
      location: { latitude: 24.7136, longitude: 46.6753 },
      brand: { displayName: { ar: 'مخبز الصباح', en: 'Morning Bakery' }, urlSafeName: 'morning-bakery', imageUrl },
      listingDetails: { discountRate: 0.4, type: 'timed' },
      items: [
        { displayName: { ar: 'كرواسون', en: 'Croissant' }, urlSafeName: 'croissant', category: 'product', subCategory: 'main_dish', price: 7.5, quantity: 12 },
        {
          displayName: { ar: 'قهوة عربية', en: 'Arabic coffee' },
          urlSafeName: 'arabic-coffee',
          category: 'product',
          subCategory: 'drink',
          price: 19.99,
          quantity: 6,
        },
      ],
    },
  }),
).catch((error: unknown) => {
  if (error instanceof ProblemError && (error.status === 401 || error.status === 403)) {
    fail(`TOKEN is not a provider token the service accepts (${error.message})`)
  }
  if (error instanceof ProblemError && error.problem.type === '/problems/image-unavailable') {
    const why = error.problem.errors?.[0]?.detail ?? error.problem.detail
    fail(
      `the service could not fetch IMAGE_URL (${imageUrl}): ${why}. Offline, run node scripts/demo-server.mjs ` +
        'and start the service with IMAGE_ALLOW_PRIVATE_NETWORKS=true (for the demo only).',
    )
  }
  throw error
})
const listingId = created.listingId
console.log('created', listingId, 'expires at', created.expiresAtUnix)

// The croissants are gone and closing time nears: quantity 0, a deeper discount, only if nobody changed it since.
const changed = await unwrap(
  client.PATCH('/api/v1/listing/{listingId}', {
    params: { path: { listingId }, header: { 'if-match': '"1"' } },
    body: { listingDetails: { discountRate: 0.6 }, items: [{ position: 0, quantity: 0 }] },
  }),
)
console.log('changed: version', changed.version, 'status', changed.status)

// The same change again with If-Match "1" is refused: version 2 is the current one. A problem is a typed error.
try {
  await unwrap(
    client.PATCH('/api/v1/listing/{listingId}', {
      params: { path: { listingId }, header: { 'if-match': '"1"' } },
      body: { items: [{ position: 1, quantity: 3 }] },
    }),
  )
} catch (error) {
  if (!(error instanceof ProblemError)) throw error
  console.log('refused:', error.status, error.problem.type)
}

if (marketplaceToken) {
  // A marketplace holds two coffees for a basket: for five minutes nobody else can have them. Then the customer
  // pays and the marketplace confirms the hold: the units are sold, and leave the listing's quantity.
  const marketplace = createListingClient({ baseUrl, token: marketplaceToken })
  const held = await unwrap(
    marketplace.POST('/api/v1/reservations', {
      body: { listingId, referenceId: `basket-${Date.now()}`, items: [{ position: 1, quantity: 2 }], holdSeconds: 300 },
    }),
  ).catch((error: unknown) => {
    if (error instanceof ProblemError && (error.status === 401 || error.status === 403)) {
      fail(`MARKETPLACE_TOKEN is not a marketplace token the service accepts (${error.message})`)
    }
    throw error
  })
  console.log('held:', held.status, 'until', held.expiresAt)
  const stock = await unwrap(marketplace.GET('/api/v1/listing/{listingId}/stock', { params: { path: { listingId } } }))
  console.log('available:', stock.items.map((item) => item.available).join(', '))
  const confirmed = await unwrap(
    marketplace.POST('/api/v1/reservations/{reservationId}/confirm', {
      params: { path: { reservationId: held.id }, header: { 'if-match': `"${held.version}"` } },
    }),
  )
  console.log('confirmed: version', confirmed.version, 'status', confirmed.status)
  // The marketplace's own feed tells it of each change of its reservations.
  console.log('marketplace events:', (await eventsOf(marketplace, held.id)).join(', '))
}

const withdrawn = await unwrap(client.POST('/api/v1/listing/{listingId}/withdraw', { params: { path: { listingId } } }))
console.log('withdrawn: version', withdrawn.version, 'status', withdrawn.status)

console.log('events:', (await eventsOf(client, listingId)).join(', '))
