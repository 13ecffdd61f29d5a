import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import { TrailingBatches } from '../trailing-batches.js'
import { stateFromRow, STATE_COLUMN_NAMES, type ListingState, type StateRow } from './listing-state.js'
import { pageItems, type ListingsPageData, type PageListing } from './page-view.js'
import type { ListListingsParams } from './schemas.js'

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
  version: number | null
  expiry_recorded: number | null
  brand_name_ar: string | null
  brand_name_en: string | null
  items_record: string | null
}

/** A page asked for: the provider, how many listings come before it, and how many it holds. */
interface PageRequest {
  providerId: string
  skip: number
  limit: number
}

export class ListingRepository {
  readonly #pageQuery: PreparedQuery<{ providerId: string; skip: number; skipPlusLimit: number }, PageRow>
  readonly #referenceQuery: PreparedQuery<{ providerId: string; referenceId: string }, { id: string; expires_at_unix: number; request_hash: string }>

  readonly #byId: PreparedQuery<{ providerId: string; listingId: string }, StateRow>
  readonly #byReference: PreparedQuery<{ providerId: string; referenceId: string }, StateRow>

  /**
   * PostgreSQL: identical page reads share one query, the next one to start after they arrive (never one that
   * began before: a client always sees its own acknowledged writes). One provider's page 1 polled by many clients
   * at once is the common hot spot, and each query is a round trip on a pool of 10. Nothing is kept after the
   * answer, and requests that share a query are the same request, so they cannot differ in fate. On SQLite a
   * query runs to its end synchronously: there is nothing in flight to share.
   */
  readonly #samePage?: TrailingBatches<PageRequest, ListingsPageData>

  constructor(database: Database) {
    if (database.dialect === 'postgres') {
      this.#samePage = new TrailingBatches(async (requests) => {
        const page = await this.#readPage(requests[0] as PageRequest)
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
      db.selectFrom('listings').select(STATE_COLUMN_NAMES).where('id', '=', param('listingId')).where('provider_id', '=', param('providerId')),
    )
    this.#byReference = new PreparedQuery(database.kysely, (db, param) =>
      db.selectFrom('listings').select(STATE_COLUMN_NAMES).where('reference_id', '=', param('referenceId')).where('provider_id', '=', param('providerId')),
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
          'l.version',
          'l.expiry_recorded',
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
    const skip = (page - 1) * limit
    return this.#samePage ? this.#samePage.submit(`${providerId} ${skip} ${limit}`, { providerId, skip, limit }) : this.#readPage({ providerId, skip, limit })
  }

  async #readPage({ providerId, skip, limit }: PageRequest): Promise<ListingsPageData> {
    const rows = await this.#pageQuery.execute({ providerId, skip, skipPlusLimit: skip + limit })
    const recordCount = rows[0]?.listing_count ?? 0
    const listings: PageListing[] = []
    for (const row of rows) {
      if (row.id === null) continue // the provider's row alone: past the end
      listings.push({
        id: row.id,
        referenceId: row.reference_id as string,
        expiresAtUnix: row.expires_at_unix as number,
        withdrawn: row.withdrawn_at_ms !== null,
        soldOut: row.sold_out === 1,
        version: row.version as number,
        expiryRecorded: row.expiry_recorded === 1,
        brandNameAr: row.brand_name_ar as string,
        brandNameEn: row.brand_name_en as string,
        items: pageItems(row.items_record as string),
      })
    }
    return { recordCount, listings }
  }
}
