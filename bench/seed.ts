/**
 * Fills a database with one provider's listings, fast, straight through the tables (the HTTP path would take
 * minutes per 100k). The columns come from the repository's own listingColumns and itemColumns, so the rows
 * are what the service writes; seq is dense 1..N, one listing per millisecond, and the provider's counters
 * match. No events are written: the seeded listings are as if created before the event feed existed. The service then starts on this database as it would on a real one.
 */
import { sql } from 'kysely'
import type { Database } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { cellOf } from '../src/discovery/cells.js'
import { unitVector } from '../src/discovery/sphere.js'
import { listingId } from '../src/ids.js'
import { itemColumns, listingColumns } from '../src/listings/columns.js'
import type { CreateListingInput } from '../src/listings/schemas.js'
import { ProviderRepository } from '../src/providers/repository.js'

export interface Seeded {
  providerId: string
  token: string
}

/** Rows per INSERT: under SQLite's and PostgreSQL's bound-parameter limits for the widest table. */
const BATCH = 1000
const TTL_SECONDS = 7200

/** Every seeded listing is this one, under its own referenceId: three items named in Arabic and English. */
const LISTING = {
  referenceId: '',
  location: { latitude: 24.7136, longitude: 46.6753 },
  brand: {
    displayName: { ar: 'مخبز الصباح', en: 'Morning Bakery' },
    urlSafeName: 'morning-bakery',
    imageUrl: 'https://images.example.com/brand.png',
  },
  listingDetails: { discountRate: 0.3, type: 'timed', isAssignedToDriver: false },
  items: [
    ['كرواسون بالزبدة', 'Butter croissant', 'butter-croissant', 7.5],
    ['قهوة عربية', 'Arabic coffee', 'arabic-coffee', 8.75],
    ['كعكة التمر', 'Date cake', 'date-cake', 10],
  ].map(([ar, en, urlSafeName, price], i) => ({
    displayName: { ar: ar as string, en: en as string },
    urlSafeName: urlSafeName as string,
    category: 'product' as const,
    subCategory: 'main_dish' as const,
    price: price as number,
    quantity: 10 + i,
  })),
} satisfies CreateListingInput

/** The listing with `count` items: its three, then numbered ones (a full page of 50 × 100 items is ~760 KB). */
function listingWithItems(count: number): CreateListingInput {
  const items = Array.from({ length: count }, (_, i) => {
    const base = LISTING.items[i % LISTING.items.length] as (typeof LISTING.items)[number]
    return i < LISTING.items.length
      ? base
      : { ...base, displayName: { ar: `${base.displayName.ar} ${i}`, en: `${base.displayName.en} ${i}` }, urlSafeName: `item-${i}` }
  })
  return { ...LISTING, items }
}

export interface SeedOptions {
  onProgress?: (done: number) => void
  /** Items per listing (3 unless given). */
  items?: number
  providerName?: string
  /** Where listing `seq` is and when it expires (discovery's benchmark); the one LISTING's place otherwise. */
  place?: (seq: number) => { latitude: number; longitude: number; expiresAtUnix: number; discountRate: number }
  /** ANALYZE PostgreSQL afterwards (true unless false: a caller seeding many providers analyzes once at the end). */
  analyze?: boolean
}

export async function seed(database: Database, count: number, options: SeedOptions = {}): Promise<Seeded> {
  const { onProgress, items: itemCount = 3, providerName = 'Bench Bakery', place, analyze = true } = options
  await migrate(database)
  const startMs = Date.now() - count // one listing per millisecond, the newest now
  const provider = await new ProviderRepository(database).create({ name: providerName, industry: 'bakery' }, startMs)
  const listing = listingWithItems(itemCount)
  const items = itemColumns(listing)
  const itemsRecord = JSON.stringify(items)

  await database.kysely.transaction().execute(async (trx) => {
    for (let first = 1; first <= count; first += BATCH) {
      const listings = []
      for (let seq = first; seq < Math.min(first + BATCH, count + 1); seq++) {
        const createdAtMs = startMs + seq
        const id = listingId(createdAtMs, 0)
        const where = place?.(seq)
        const input = where
          ? {
              ...listing,
              referenceId: `seed-${seq}`,
              location: { latitude: where.latitude, longitude: where.longitude },
              listingDetails: { ...listing.listingDetails, discountRate: where.discountRate },
            }
          : { ...listing, referenceId: `seed-${seq}` }
        const expiresAtUnix = where?.expiresAtUnix ?? Math.floor(createdAtMs / 1000) + TTL_SECONDS
        listings.push({
          id,
          seq,
          created_at_ms: createdAtMs,
          updated_at_ms: createdAtMs,
          items_record: itemsRecord,
          expires_at_unix: expiresAtUnix,
          ...listingColumns(provider.id, input),
          request_hash: 'seeded',
          // Discovery's indexes are on it; the creates write it too (columns.ts's prepareListing).
          cell: cellOf(unitVector(input.location.latitude, input.location.longitude)),
        })
      }
      await trx.insertInto('listings').values(listings).execute()
      onProgress?.(first + listings.length - 1)
    }
    await trx
      .updateTable('providers')
      .set({ listing_count: count, last_created_ms: startMs + count, last_created_tick: 0 })
      .where('id', '=', provider.id)
      .execute()
  })
  // This machine's PostgreSQL runs without autovacuum (docs/benchmarks.md): without statistics the planner would plan
  // the service's queries for empty tables. Any real deployment's autoanalyze has run long before 100k rows.
  if (analyze && database.dialect === 'postgres') await sql`analyze`.execute(database.kysely)
  return { providerId: provider.id, token: provider.token.token }
}
