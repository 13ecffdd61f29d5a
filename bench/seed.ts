/**
 * Fills a database with one provider's listings, fast, straight through the tables (the HTTP path would take
 * minutes per 100k). Rows have the shape the service writes: dense seq 1..N, creation times that never go
 * backwards, ULIDs ordered within a millisecond, three items with Arabic and English names, the provider's
 * counters matching. The service then starts on this database as it would on a real one.
 */
import type { Database } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { listingId } from '../src/ids.js'
import { itemsJson } from '../src/listings/page-json.js'
import { ProviderRepository } from '../src/providers/repository.js'

export interface Seeded {
  providerId: string
  token: string
}

/** Rows per INSERT: under SQLite's and PostgreSQL's bound-parameter limits for the widest table. */
const BATCH = 1000
const ITEMS = [
  { nameAr: 'كرواسون بالزبدة', nameEn: 'Butter croissant', urlSafeName: 'butter-croissant', price: 7.5, quantity: 10 },
  { nameAr: 'قهوة عربية', nameEn: 'Arabic coffee', urlSafeName: 'arabic-coffee', price: 8.75, quantity: 11 },
  { nameAr: 'كعكة التمر', nameEn: 'Date cake', urlSafeName: 'date-cake', price: 10, quantity: 12 },
].map((item) => ({ ...item, category: 'product' as const }))
const ITEMS_JSON = itemsJson(ITEMS)

export async function seed(database: Database, count: number, onProgress?: (done: number) => void): Promise<Seeded> {
  await migrate(database)
  const startMs = Date.now() - count // one listing per millisecond, the newest now
  const provider = await new ProviderRepository(database).create({ name: 'Bench Bakery', industry: 'bakery' }, startMs)

  await database.kysely.transaction().execute(async (trx) => {
    for (let first = 1; first <= count; first += BATCH) {
      const listings = []
      const items = []
      for (let seq = first; seq < Math.min(first + BATCH, count + 1); seq++) {
        const createdAtMs = startMs + seq
        const id = listingId(createdAtMs, 0)
        const own = ITEMS.map((item, position) => ({
          listing_id: id,
          position,
          name_ar: item.nameAr,
          name_en: item.nameEn,
          url_safe_name: item.urlSafeName,
          image_url: null,
          category: item.category,
          sub_category: 'main_dish',
          price_thousandths: Math.round(item.price * 1000),
          quantity: item.quantity,
        }))
        items.push(...own)
        listings.push({
          id,
          provider_id: provider.id,
          seq,
          reference_id: `seed-${seq}`,
          request_hash: 'seeded',
          type: seq % 2 ? 'timed' : 'priority_timed',
          discount_rate: 0.3,
          is_assigned_to_driver: 0,
          latitude: 24.7136,
          longitude: 46.6753,
          brand_name_ar: 'مخبز الصباح',
          brand_name_en: 'Morning Bakery',
          brand_url_safe_name: 'morning-bakery',
          brand_image_url: 'https://images.example.com/brand.png',
          created_at_ms: createdAtMs,
          expires_at_unix: Math.floor(createdAtMs / 1000) + 7200,
          items_json: ITEMS_JSON,
        })
      }
      await trx.insertInto('listings').values(listings).execute()
      await trx.insertInto('listing_items').values(items).execute()
      onProgress?.(first + listings.length - 1)
    }
    await trx
      .updateTable('providers')
      .set({ listing_count: count, last_created_ms: startMs + count, last_created_tick: 0 })
      .where('id', '=', provider.id)
      .execute()
  })
  return { providerId: provider.id, token: provider.token.token }
}
