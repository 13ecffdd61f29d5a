/**
 * The README's walk-through, in TypeScript: create a listing, change it, withdraw it, read its events.
 *
 *   TOKEN=lst_… npx tsx clients/typescript/example.ts
 *
 * BASE_URL (default http://127.0.0.1:3000) and IMAGE_URL (an image the service can fetch) may be set too.
 */
import { createListingClient, ProblemError, unwrap } from './index.js'

const client = createListingClient({
  baseUrl: process.env.BASE_URL ?? 'http://127.0.0.1:3000',
  token: process.env.TOKEN,
})
const imageUrl = process.env.IMAGE_URL ?? 'https://www.w3.org/Icons/w3c_home.png'

const created = await unwrap(
  client.POST('/api/v1/listing/create', {
    body: {
      referenceId: `order-${Date.now()}`,
      location: { latitude: 24.7136, longitude: 46.6753 },
      brand: { displayName: { ar: 'مخبز الصباح', en: 'Morning Bakery' }, urlSafeName: 'morning-bakery', imageUrl },
      listingDetails: { discountRate: 0.4, type: 'timed' },
      items: [
        { displayName: { ar: 'كرواسون', en: 'Croissant' }, urlSafeName: 'croissant', category: 'product', subCategory: 'main_dish', price: 7.5, quantity: 12 },
        { displayName: { ar: 'قهوة عربية', en: 'Arabic coffee' }, urlSafeName: 'arabic-coffee', category: 'product', subCategory: 'drink', price: 19.99 },
      ],
    },
  }),
)
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
  await unwrap(client.PATCH('/api/v1/listing/{listingId}', { params: { path: { listingId }, header: { 'if-match': '"1"' } }, body: { items: [{ position: 1, quantity: 3 }] } }))
} catch (error) {
  if (!(error instanceof ProblemError)) throw error
  console.log('refused:', error.status, error.problem.type)
}

const withdrawn = await unwrap(client.POST('/api/v1/listing/{listingId}/withdraw', { params: { path: { listingId } } }))
console.log('withdrawn: version', withdrawn.version, 'status', withdrawn.status)

const events = await unwrap(client.GET('/api/v1/events', { params: { query: { limit: 50 } } }))
console.log('events:', events.data.filter((event) => event.data.id === listingId).map((event) => event.type).join(', '))
