import type { Database } from '../db/connection.js'
import { greatest } from '../db/dialect.js'
import { listingId } from '../ids.js'
import type { CreateListingInput, ListListingsParams, Listing } from './schemas.js'

export interface StoredListingRef {
  listingId: string
  expiresAtUnix: number
  requestHash: string
}

export interface NewListing {
  providerId: string
  input: CreateListingInput
  requestHash: string
  nowMs: number
  ttlSeconds: number
}

export type StoredListing = Omit<Listing, 'status' | 'brand'> & { brand: Omit<Listing['brand'], 'industry'> }

/** Prices are kept as integer thousandths: the API accepts at most three decimals, so this is exact. */
const toThousandths = (price: number) => Math.round(price * 1000)
const fromThousandths = (thousandths: number) => thousandths / 1000

export class ListingRepository {
  constructor(private readonly database: Database) {}

  async findByReference(providerId: string, referenceId: string): Promise<StoredListingRef | undefined> {
    const row = await this.database.kysely
      .selectFrom('listings')
      .select(['id', 'expires_at_unix', 'request_hash'])
      .where('provider_id', '=', providerId)
      .where('reference_id', '=', referenceId)
      .executeTakeFirst()
    return row && { listingId: row.id, expiresAtUnix: row.expires_at_unix, requestHash: row.request_hash }
  }

  /**
   * Stores a listing and its items in one transaction. The first statement bumps the provider's counter,
   * which (a) yields the listing's dense sequence number, (b) keeps recordCount exact without COUNT(*), and
   * (c) serialises one provider's creates, so a concurrent duplicate referenceId waits and then fails on the
   * unique constraint instead of racing. Creation times never go backwards within a provider.
   */
  async insert(listing: NewListing): Promise<{ listingId: string; expiresAtUnix: number }> {
    const { providerId, input, nowMs } = listing
    const { dialect } = this.database
    return this.database.kysely.transaction().execute(async (trx) => {
      const counter = await trx
        .updateTable('providers')
        .set((eb) => ({
          listing_count: eb('listing_count', '+', 1),
          last_created_tick: eb
            .case()
            .when('last_created_ms', '>=', nowMs)
            .then(eb('last_created_tick', '+', 1))
            .else(0)
            .end(),
          last_created_ms: greatest(dialect, eb.ref('last_created_ms'), eb.val(nowMs)),
        }))
        .where('id', '=', providerId)
        .returning(['listing_count', 'last_created_ms', 'last_created_tick'])
        .executeTakeFirstOrThrow()

      const createdAtMs = counter.last_created_ms
      const id = listingId(createdAtMs, counter.last_created_tick)
      const expiresAtUnix = Math.floor(createdAtMs / 1000) + listing.ttlSeconds
      await trx
        .insertInto('listings')
        .values({
          id,
          provider_id: providerId,
          seq: counter.listing_count,
          reference_id: input.referenceId,
          request_hash: listing.requestHash,
          type: input.listingDetails.type,
          discount_rate: input.listingDetails.discountRate,
          is_assigned_to_driver: input.listingDetails.isAssignedToDriver ? 1 : 0,
          latitude: input.location.latitude,
          longitude: input.location.longitude,
          brand_name_ar: input.brand.displayName.ar,
          brand_name_en: input.brand.displayName.en,
          brand_url_safe_name: input.brand.urlSafeName,
          brand_image_url: input.brand.imageUrl,
          created_at_ms: createdAtMs,
          expires_at_unix: expiresAtUnix,
        })
        .execute()
      await trx
        .insertInto('listing_items')
        .values(
          input.items.map((item, position) => ({
            listing_id: id,
            position,
            name_ar: item.displayName.ar,
            name_en: item.displayName.en,
            url_safe_name: item.urlSafeName,
            image_url: item.imageUrl ?? null,
            category: item.category,
            sub_category: item.subCategory,
            price_thousandths: toThousandths(item.price),
            quantity: item.quantity,
          })),
        )
        .execute()
      return { listingId: id, expiresAtUnix }
    })
  }

  /**
   * One page, newest first. Sequence numbers are dense (1..recordCount) and follow creation order, so page N
   * is the seq range (count − N·limit, count − (N−1)·limit]: an index range, as cheap at page 10,000 as at
   * page 1, and recordCount is one row read. A listing committed between the two reads has a seq above the
   * count read first, so the page stays consistent with the recordCount returned.
   */
  async page(providerId: string, { page, limit }: ListListingsParams): Promise<{ recordCount: number; listings: StoredListing[] }> {
    const db = this.database.kysely
    const provider = await db
      .selectFrom('providers')
      .select('listing_count')
      .where('id', '=', providerId)
      .executeTakeFirst()
    const recordCount = provider?.listing_count ?? 0
    const newest = recordCount - (page - 1) * limit
    if (newest <= 0) return { recordCount, listings: [] }

    const rows = await db
      .selectFrom('listings')
      .select(['id', 'reference_id', 'expires_at_unix', 'brand_name_ar', 'brand_name_en'])
      .where('provider_id', '=', providerId)
      .where('seq', '>', newest - limit)
      .where('seq', '<=', newest)
      .orderBy('seq', 'desc')
      .execute()
    if (rows.length === 0) return { recordCount, listings: [] }
    const items = await db
      .selectFrom('listing_items')
      .select(['listing_id', 'name_ar', 'name_en', 'price_thousandths', 'quantity', 'category'])
      .where(
        'listing_id',
        'in',
        rows.map((row) => row.id),
      )
      .orderBy('listing_id')
      .orderBy('position')
      .execute()

    const itemsByListing = new Map<string, StoredListing['items']>()
    for (const item of items) {
      let list = itemsByListing.get(item.listing_id)
      if (!list) itemsByListing.set(item.listing_id, (list = []))
      list.push({
        nameAr: item.name_ar,
        nameEn: item.name_en,
        price: fromThousandths(item.price_thousandths),
        quantity: item.quantity,
        category: item.category as StoredListing['items'][number]['category'],
      })
    }
    const listings = rows.map((row) => ({
      id: row.id,
      referenceId: row.reference_id,
      expiresAtUnix: row.expires_at_unix,
      items: itemsByListing.get(row.id) ?? [],
      brand: { nameAr: row.brand_name_ar, nameEn: row.brand_name_en },
    }))
    return { recordCount, listings }
  }
}
