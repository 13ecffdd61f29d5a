import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import { SqliteReadCache } from '../db/sqlite-read-cache.js'
import { TrailingBatches } from '../trailing-batches.js'
import { fromThousandths, type ItemColumns } from './columns.js'
import { stateFromRow, STATE_COLUMN_NAMES, type ListingState, type StateRow } from './listing-state.js'
import { itemsJson, type PageListing } from './page-json.js'
import type { ListListingsParams } from './schemas.js'

interface PageParams {
  providerId: string
  skip: number
  limit: number
}

/** One page as read: shared by the requests a query served, so nobody may change it. */
export interface ListingsPageData {
  readonly recordCount: number
  readonly listings: readonly PageListing[]
}

export interface StoredListingRef {
  listingId: string
  expiresAtUnix: number
  requestHash: string
}

/** A row of the page query: the provider's count, and a listing unless the page is past the end. */
interface PageRow {
  listing_count: number
  id: string | null
  reference_id: string | null
  expires_at_unix: number | null
  withdrawn_at_ms: number | null
  sold_out: number | null
  brand_name_ar: string | null
  brand_name_en: string | null
  items_record: string | null
}

export class ListingRepository {
  readonly #pageQuery: PreparedQuery<{ providerId: string; skip: number; skipPlusLimit: number }, PageRow>
  readonly #referenceQuery: PreparedQuery<
    { providerId: string; referenceId: string },
    { id: string; expires_at_unix: number; request_hash: string }
  >

  /**
   * PostgreSQL: concurrent reads of the same page share a query (TrailingBatches: never one that began before
   * the request). A provider's page 1 polled by many clients at once is the common hot spot; 50 clients
   * reading it cost 50 round trips queued on 10 pooled connections, each also paid in the CPU the database
   * shares with us.
   */
  readonly #samePageReads?: TrailingBatches<PageParams, ListingsPageData>
  /** SQLite: pages are kept until anything is committed (SqliteReadCache); the query is most of a page's time. */
  readonly #unchangedPages?: SqliteReadCache<ListingsPageData>
  readonly #byId: PreparedQuery<{ providerId: string; listingId: string }, StateRow>
  readonly #byReference: PreparedQuery<{ providerId: string; referenceId: string }, StateRow>

  constructor(database: Database) {
    const { sqlite } = database
    if (sqlite) {
      this.#unchangedPages = new SqliteReadCache(sqlite.connection)
    } else {
      this.#samePageReads = new TrailingBatches(async (requests) => {
        // Identical requests (one key): one read answers them all.
        const page = await this.#readPage(requests[0] as PageParams)
        return requests.map(() => ({ ok: true, value: page }))
      })
    }
    this.#referenceQuery = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('listings')
        .select(['id', 'expires_at_unix', 'request_hash'])
        .where('provider_id', '=', param('providerId'))
        .where('reference_id', '=', param('referenceId')),
    )
    // The caller's own listings only: another provider's id is as unknown as one that does not exist.
    this.#byId = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('listings')
        .select(STATE_COLUMN_NAMES)
        .where('id', '=', param('listingId'))
        .where('provider_id', '=', param('providerId')),
    )
    this.#byReference = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('listings')
        .select(STATE_COLUMN_NAMES)
        .where('reference_id', '=', param('referenceId'))
        .where('provider_id', '=', param('providerId')),
    )
    this.#pageQuery = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('providers as p')
        .leftJoin('listings as l', (join) =>
          join
            .onRef('l.provider_id', '=', 'p.id')
            .on((eb) => eb('l.seq', '>', eb('p.listing_count', '-', param('skipPlusLimit'))))
            .on((eb) => eb('l.seq', '<=', eb('p.listing_count', '-', param('skip')))),
        )
        .select([
          'p.listing_count',
          'l.id',
          'l.reference_id',
          'l.expires_at_unix',
          'l.withdrawn_at_ms',
          'l.sold_out',
          'l.brand_name_ar',
          'l.brand_name_en',
          'l.items_record',
        ])
        .where('p.id', '=', param('providerId'))
        .orderBy('l.seq', 'desc'),
    )
  }

  async findByReference(providerId: string, referenceId: string): Promise<StoredListingRef | undefined> {
    const [row] = await this.#referenceQuery.execute({ providerId, referenceId })
    return row && { listingId: row.id, expiresAtUnix: row.expires_at_unix, requestHash: row.request_hash }
  }

  async findById(providerId: string, listingId: string): Promise<ListingState | undefined> {
    const [row] = await this.#byId.execute({ providerId, listingId })
    return row && stateFromRow(row)
  }

  async findStateByReference(providerId: string, referenceId: string): Promise<ListingState | undefined> {
    const [row] = await this.#byReference.execute({ providerId, referenceId })
    return row && stateFromRow(row)
  }


  /**
   * One page, newest first, in one statement (one snapshot, one round trip). Sequence numbers are dense
   * (1..recordCount) and follow creation order, so page N is the seq range (count − N·limit, count − (N−1)·limit]
   * of the provider's counter row: an index range, as cheap at page 10,000 as at page 1, and recordCount is
   * read in the same statement. The left join keeps the provider's row when the page is past the end.
   */
  page(providerId: string, { page, limit }: ListListingsParams): Promise<ListingsPageData> {
    const params = { providerId, skip: (page - 1) * limit, limit }
    const key = `${providerId} ${params.skip} ${limit}`
    if (this.#unchangedPages) return this.#unchangedPages.get(key, () => this.#readPage(params))
    if (this.#samePageReads) return this.#samePageReads.submit(key, params)
    return this.#readPage(params)
  }

  async #readPage({ providerId, skip, limit }: PageParams): Promise<ListingsPageData> {
    const rows = await this.#pageQuery.execute({ providerId, skip, skipPlusLimit: skip + limit })
    const recordCount = rows[0]?.listing_count ?? 0
    const listings: PageListing[] = []
    for (const row of rows) {
      if (row.id === null) continue // the provider's row alone: past the end
      const listing: PageListing = {
        id: row.id,
        referenceId: row.reference_id as string,
        expiresAtUnix: row.expires_at_unix as number,
        withdrawn: row.withdrawn_at_ms !== null,
        soldOut: row.sold_out === 1,
        brandNameAr: row.brand_name_ar as string,
        brandNameEn: row.brand_name_en as string,
        itemsJson: itemsJson(
          (JSON.parse(row.items_record as string) as ItemColumns[]).map((item) => ({
            nameAr: item.name_ar,
            nameEn: item.name_en,
            price: fromThousandths(item.price_thousandths),
            quantity: item.quantity,
            category: item.category,
          })),
        ),
      }
      listings.push(listing)
    }
    return { recordCount, listings }
  }

}
