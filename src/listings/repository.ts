import { sql } from 'kysely'
import type { Database } from '../db/connection.js'
import { greatest } from '../db/dialect.js'
import { PreparedQuery } from '../db/prepared-query.js'
import { listingId, listingIdRandomPart, listingIdSql } from '../ids.js'
import { itemsJson, type PageListing } from './page-json.js'
import type { Categories, CreateListingInput, ListListingsParams } from './schemas.js'

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

/** A row of the page query: the provider's count, and a listing unless the page is past the end. */
interface PageRow {
  listing_count: number
  id: string | null
  reference_id: string | null
  expires_at_unix: number | null
  brand_name_ar: string | null
  brand_name_en: string | null
  items_json: string | null
}

/**
 * The columns of a listing row that come from the request; id, seq and times come from the counter.
 * Exported with itemColumns for bench/seed.ts, so seeded rows are the rows the service writes.
 */
export function listingColumns({ providerId, input, requestHash }: NewListing) {
  return {
    provider_id: providerId,
    reference_id: input.referenceId,
    request_hash: requestHash,
    type: input.listingDetails.type,
    discount_rate: input.listingDetails.discountRate,
    is_assigned_to_driver: input.listingDetails.isAssignedToDriver ? 1 : 0,
    latitude: input.location.latitude,
    longitude: input.location.longitude,
    brand_name_ar: input.brand.displayName.ar,
    brand_name_en: input.brand.displayName.en,
    brand_url_safe_name: input.brand.urlSafeName,
    brand_image_url: input.brand.imageUrl,
    // The input price is what a page returns: at most 3 decimals, so it equals fromThousandths(stored).
    items_json: itemsJson(
      input.items.map(({ displayName, price, quantity, category }) => ({ nameAr: displayName.ar, nameEn: displayName.en, price, quantity, category })),
    ),
  }
}

/** A listing's item rows, in the order sent, without listing_id. */
export function itemColumns(input: CreateListingInput) {
  return input.items.map((item, position) => ({
    position,
    name_ar: item.displayName.ar,
    name_en: item.displayName.en,
    url_safe_name: item.urlSafeName,
    image_url: item.imageUrl ?? null,
    category: item.category,
    sub_category: item.subCategory,
    price_thousandths: toThousandths(item.price),
    quantity: item.quantity,
  }))
}

type ListingColumns = ReturnType<typeof listingColumns>
type ItemColumns = ReturnType<typeof itemColumns>[number]

// The PostgreSQL create statement is compiled once, so it names its columns up front. `satisfies` makes the
// compiler hold these lists to exactly the keys listingColumns and itemColumns return.
const LISTING_COLUMN_NAMES = Object.keys({
  provider_id: 0,
  reference_id: 0,
  request_hash: 0,
  type: 0,
  discount_rate: 0,
  is_assigned_to_driver: 0,
  latitude: 0,
  longitude: 0,
  brand_name_ar: 0,
  brand_name_en: 0,
  brand_url_safe_name: 0,
  brand_image_url: 0,
  items_json: 0,
} satisfies Record<keyof ListingColumns, 0>) as Array<keyof ListingColumns>

/** Item columns with their PostgreSQL types, to read the items back from one jsonb parameter. */
const ITEM_COLUMN_TYPES = {
  position: 'integer',
  name_ar: 'text',
  name_en: 'text',
  url_safe_name: 'text',
  image_url: 'text',
  category: 'text',
  sub_category: 'text',
  price_thousandths: 'bigint',
  quantity: 'integer',
} satisfies Record<keyof ItemColumns, string>

type CreateParams = ListingColumns & { now_ms: number; ttl_seconds: number; random: string; items: string }

/** Prices are kept as integer thousandths: the API accepts at most three decimals, so this is exact. */
const toThousandths = (price: number) => Math.round(price * 1000)
const fromThousandths = (thousandths: number) => thousandths / 1000

export class ListingRepository {
  readonly #pageQuery: PreparedQuery<{ providerId: string; skip: number; skipPlusLimit: number }, PageRow>
  readonly #referenceQuery: PreparedQuery<
    { providerId: string; referenceId: string },
    { id: string; expires_at_unix: number; request_hash: string }
  >
  /** PostgreSQL only (compiled on first use, so never on SQLite): see #insertInOneStatement. */
  readonly #createQuery: PreparedQuery<CreateParams, { id: string; expires_at_unix: number }>

  constructor(private readonly database: Database) {
    this.#referenceQuery = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('listings')
        .select(['id', 'expires_at_unix', 'request_hash'])
        .where('provider_id', '=', param('providerId'))
        .where('reference_id', '=', param('referenceId')),
    )
    this.#createQuery = new PreparedQuery(database.kysely, (_db, param) => {
      const listingNames = sql.join(LISTING_COLUMN_NAMES.map((name) => sql.ref(name)))
      const itemNames = sql.join(Object.keys(ITEM_COLUMN_TYPES).map((name) => sql.ref(name)))
      const itemRecord = sql.raw(Object.entries(ITEM_COLUMN_TYPES).map(([name, type]) => `${name} ${type}`).join(', '))
      return sql<{ id: string; expires_at_unix: number }>`
        with counter as (
          update providers set
            listing_count = listing_count + 1,
            last_created_tick = case when last_created_ms >= ${param('now_ms')} then last_created_tick + 1 else 0 end,
            last_created_ms = greatest(last_created_ms, ${param('now_ms')})
          where id = ${param('provider_id')}
          returning listing_count, last_created_ms, last_created_tick
        ), listing as (
          insert into listings (id, seq, created_at_ms, expires_at_unix, ${listingNames})
          select ${listingIdSql(sql.ref('last_created_ms'), sql.ref('last_created_tick'), param('random'))},
            listing_count, last_created_ms, last_created_ms / 1000 + ${param('ttl_seconds')},
            ${sql.join(LISTING_COLUMN_NAMES.map((name) => sql`${param(name)}`))}
          from counter
          returning id, expires_at_unix
        ), items as (
          insert into listing_items (listing_id, ${itemNames})
          select listing.id, ${itemNames}
          from listing cross join jsonb_to_recordset(${param('items')}::jsonb) as item(${itemRecord})
        )
        select id, expires_at_unix from listing`
    })
    this.#pageQuery = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('providers as p')
        .leftJoin('listings as l', (join) =>
          join
            .onRef('l.provider_id', '=', 'p.id')
            .on((eb) => eb('l.seq', '>', eb('p.listing_count', '-', param('skipPlusLimit'))))
            .on((eb) => eb('l.seq', '<=', eb('p.listing_count', '-', param('skip')))),
        )
        .select(['p.listing_count', 'l.id', 'l.reference_id', 'l.expires_at_unix', 'l.brand_name_ar', 'l.brand_name_en', 'l.items_json'])
        .where('p.id', '=', param('providerId'))
        .orderBy('l.seq', 'desc'),
    )
  }

  async findByReference(providerId: string, referenceId: string): Promise<StoredListingRef | undefined> {
    const [row] = await this.#referenceQuery.execute({ providerId, referenceId })
    return row && { listingId: row.id, expiresAtUnix: row.expires_at_unix, requestHash: row.request_hash }
  }

  /**
   * Stores a listing and its items, all or nothing. Bumping the provider's counter row (a) yields the listing's
   * dense sequence number, (b) keeps recordCount exact without COUNT(*), and (c) serialises one provider's
   * creates, so a concurrent duplicate referenceId waits and then fails on the unique constraint instead of
   * racing. Creation times never go backwards within a provider.
   */
  async insert(listing: NewListing): Promise<{ listingId: string; expiresAtUnix: number }> {
    return this.database.dialect === 'postgres' ? this.#insertInOneStatement(listing) : this.#insertInTransaction(listing)
  }

  /**
   * SQLite: one transaction of three statements. They run back to back on this thread (better-sqlite3 is
   * synchronous), so the write lock is held only as long as the statements and the commit take.
   */
  async #insertInTransaction(listing: NewListing): Promise<{ listingId: string; expiresAtUnix: number }> {
    const { providerId, nowMs } = listing
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
          seq: counter.listing_count,
          created_at_ms: createdAtMs,
          expires_at_unix: expiresAtUnix,
          ...listingColumns(listing),
        })
        .execute()
      await trx
        .insertInto('listing_items')
        .values(itemColumns(listing.input).map((item) => ({ listing_id: id, ...item })))
        .execute()
      return { listingId: id, expiresAtUnix }
    })
  }

  /**
   * PostgreSQL: one statement (counter, listing and items as data-modifying CTEs; the listing id built in SQL
   * by listingIdSql). The counter row's lock is held for one statement and its commit. As a transaction of
   * separate statements it was also held across three round trips, each waiting its turn on our busy event
   * loop: one provider's creates queued behind that lock (607/s at 1 item in the benchmark). The statement is
   * built once (#createQuery): building and compiling it took 52 µs per create.
   */
  async #insertInOneStatement(listing: NewListing): Promise<{ listingId: string; expiresAtUnix: number }> {
    const [row] = await this.#createQuery.execute({
      ...listingColumns(listing),
      now_ms: listing.nowMs,
      ttl_seconds: listing.ttlSeconds,
      random: listingIdRandomPart(),
      items: JSON.stringify(itemColumns(listing.input)),
    })
    if (!row) throw new Error(`provider ${listing.providerId} does not exist`)
    return { listingId: row.id, expiresAtUnix: Number(row.expires_at_unix) }
  }

  /**
   * One page, newest first, in one statement (one snapshot, one round trip). Sequence numbers are dense
   * (1..recordCount) and follow creation order, so page N is the seq range (count − N·limit, count − (N−1)·limit]
   * of the provider's counter row: an index range, as cheap at page 10,000 as at page 1, and recordCount is
   * read in the same statement. The left join keeps the provider's row when the page is past the end.
   */
  async page(providerId: string, { page, limit }: ListListingsParams): Promise<{ recordCount: number; listings: PageListing[] }> {
    const skip = (page - 1) * limit
    const rows = await this.#pageQuery.execute({ providerId, skip, skipPlusLimit: skip + limit })
    const recordCount = rows[0]?.listing_count ?? 0
    const listings: PageListing[] = []
    const withoutJson: PageListing[] = []
    for (const row of rows) {
      if (row.id === null) continue // the provider's row alone: past the end
      const listing: PageListing = {
        id: row.id,
        referenceId: row.reference_id as string,
        expiresAtUnix: row.expires_at_unix as number,
        brandNameAr: row.brand_name_ar as string,
        brandNameEn: row.brand_name_en as string,
        itemsJson: row.items_json ?? '',
      }
      listings.push(listing)
      if (row.items_json === null) withoutJson.push(listing)
    }
    if (withoutJson.length > 0) await this.#fillItemsJson(withoutJson)
    return { recordCount, listings }
  }

  /** Listings written before items_json existed (see its migration) get it from their item rows. */
  async #fillItemsJson(listings: PageListing[]): Promise<void> {
    const items = await this.database.kysely
      .selectFrom('listing_items')
      .select(['listing_id', 'name_ar', 'name_en', 'price_thousandths', 'quantity', 'category'])
      .where(
        'listing_id',
        'in',
        listings.map((listing) => listing.id),
      )
      .orderBy('listing_id')
      .orderBy('position')
      .execute()
    for (const listing of listings) {
      listing.itemsJson = itemsJson(
        items
          .filter((item) => item.listing_id === listing.id)
          .map((item) => ({
            nameAr: item.name_ar,
            nameEn: item.name_en,
            price: fromThousandths(item.price_thousandths),
            quantity: item.quantity,
            category: item.category as (typeof Categories)[number],
          })),
      )
    }
  }
}
