import type { Kysely } from 'kysely'
import type { Database } from '../db/connection.js'
import { ownerKey } from '../db/dialect.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { PositionedRead, ReadYourWrites } from '../db/read-your-writes.js'
import type { Tables } from '../db/tables.js'
import { providerOwner } from '../events/owner.js'
import { TrailingBatches } from '../trailing-batches.js'
import { stateFromRow, STATE_COLUMN_NAMES, type ListingState, type StateRow } from './listing-state.js'
import type { ListingsPageData, PageListing } from './page-view.js'
import type { ListListingsParams } from './schemas.js'

export interface StoredListingRef {
  listingId: string
  expiresAtUnix: number
  requestHash: string
}

/** A row of the page query: the provider's counts, and a listing unless the page is past the end. */
interface PageRow {
  listing_count: number
  /** The provider's position, for a read on the standby. */
  event_count: number
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

type PageParams = { providerId: string; skip: number; skipPlusLimit: number }

/**
 * One page in one statement (one snapshot, one round trip). Sequence numbers are dense (1..recordCount) in creation
 * order, so page N is the seq range (count − N·limit, count − (N−1)·limit]: an index range, as cheap deep in as at
 * page 1. The left join keeps the provider's row when the page is past the end.
 */
export const pageQuery = (on: Kysely<Tables>) =>
  new PreparedQuery<PageParams, PageRow>(on, (db, param) =>
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
        'p.event_count',
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
      .where('p.id', '=', ownerKey(db, param('providerId')))
      .orderBy('l.seq', 'desc'),
  )

type Nullable<T> = { [K in keyof T]: T[K] | null }

type OneBy = 'id' | 'reference_id'

/** The provider's row is read even without the listing, so a standby that has not replayed the create is told apart from "not found". */
export const positionedStateQuery = (on: Kysely<Tables>, by: OneBy) =>
  new PreparedQuery<{ providerId: string; key: string }, Nullable<StateRow> & { event_count: number }>(on, (db, param) =>
    db
      .selectFrom('providers as p')
      .leftJoin('listings as l', (join) => join.onRef('l.provider_id', '=', 'p.id').on(`l.${by}`, '=', param('key')))
      .select(['p.event_count', ...STATE_COLUMN_NAMES.map((name) => `l.${name}` as const)])
      .where('p.id', '=', ownerKey(db, param('providerId'))),
  )

/** A create's check of its referenceId. */
export const referenceQuery = (on: Kysely<Tables>) =>
  new PreparedQuery<{ providerId: string; referenceId: string }, { id: string; expires_at_unix: number; request_hash: string }>(on, (db, param) =>
    db
      .selectFrom('listings')
      .select(['id', 'expires_at_unix', 'request_hash'])
      .where('provider_id', '=', ownerKey(db, param('providerId')))
      .where('reference_id', '=', param('referenceId')),
  )

/** The caller's own listing only: another provider's id is as unknown as one that does not exist. */
export const oneQuery = (on: Kysely<Tables>, by: OneBy) =>
  new PreparedQuery<{ providerId: string; key: string }, StateRow>(on, (db, param) =>
    db
      .selectFrom('listings')
      .select(STATE_COLUMN_NAMES)
      .where(by, '=', param('key'))
      .where('provider_id', '=', ownerKey(db, param('providerId'))),
  )

async function positionedState(
  query: ReturnType<typeof positionedStateQuery>,
  providerId: string,
  key: string,
): Promise<PositionedRead<ListingState | undefined>> {
  const [row] = await query.execute({ providerId, key })
  if (!row) return { position: undefined, value: undefined }
  return { position: row.event_count, value: row.id === null ? undefined : stateFromRow(row as StateRow) }
}

interface Standby {
  reads: ReadYourWrites
  page: PreparedQuery<PageParams, PageRow>
  one: Record<OneBy, ReturnType<typeof positionedStateQuery>>
}

function pageData(rows: readonly PageRow[]): ListingsPageData {
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
      itemsRecord: row.items_record as string,
    })
  }
  return { recordCount, listings }
}

export class ListingRepository {
  readonly #pageQuery: PreparedQuery<PageParams, PageRow>
  readonly #referenceQuery: ReturnType<typeof referenceQuery>

  readonly #one: Record<OneBy, PreparedQuery<{ providerId: string; key: string }, StateRow>>

  /**
   * PostgreSQL: identical page reads share one query, the next to start after they arrive (never one begun before: a
   * client always sees its own acknowledged writes), as one provider's page 1 polled by many clients is the common hot
   * spot. Nothing is kept after the answer, and sharers are the same request, so they cannot differ in fate. On SQLite
   * a query runs synchronously: nothing is in flight to share.
   */
  readonly #samePage?: TrailingBatches<PageRequest, ListingsPageData>

  /** DATABASE_READ_URL: the page and the one-listing reads on the standby, while it has replayed the provider's writes. */
  readonly #standby?: Standby

  /** The create's reference check always reads the primary. */
  constructor(database: Database, reads?: ReadYourWrites) {
    if (reads) {
      this.#standby = {
        reads,
        page: pageQuery(reads.replica),
        one: { id: positionedStateQuery(reads.replica, 'id'), reference_id: positionedStateQuery(reads.replica, 'reference_id') },
      }
    }
    if (database.dialect === 'postgres') {
      this.#samePage = new TrailingBatches(async (requests) => {
        const page = await this.#readPage(requests[0] as PageRequest)
        return requests.map(() => ({ ok: true, value: page }))
      })
    }
    this.#referenceQuery = referenceQuery(database.kysely)
    this.#one = { id: oneQuery(database.kysely, 'id'), reference_id: oneQuery(database.kysely, 'reference_id') }
    this.#pageQuery = pageQuery(database.kysely)
  }

  async findByReference(providerId: string, referenceId: string): Promise<StoredListingRef | undefined> {
    const [row] = await this.#referenceQuery.execute({ providerId, referenceId })
    return row && { listingId: row.id, expiresAtUnix: row.expires_at_unix, requestHash: row.request_hash }
  }

  /** The caller's listing by its id or referenceId. */
  findOne(by: OneBy, providerId: string, key: string): Promise<ListingState | undefined> {
    return this.#read(
      providerId,
      (standby) => positionedState(standby.one[by], providerId, key),
      async () => {
        const [row] = await this.#one[by].execute({ providerId, key })
        return row && stateFromRow(row)
      },
    )
  }

  page(providerId: string, { page, limit }: ListListingsParams): Promise<ListingsPageData> {
    const skip = (page - 1) * limit
    return this.#samePage ? this.#samePage.submit(`${providerId} ${skip} ${limit}`, { providerId, skip, limit }) : this.#readPage({ providerId, skip, limit })
  }

  #readPage({ providerId, skip, limit }: PageRequest): Promise<ListingsPageData> {
    const params = { providerId, skip, skipPlusLimit: skip + limit }
    return this.#read(
      providerId,
      async (standby) => {
        const rows = await standby.page.execute(params)
        return { position: rows[0]?.event_count, value: pageData(rows) }
      },
      async () => pageData(await this.#pageQuery.execute(params)),
    )
  }

  /** On the standby when there is one and it has replayed the provider's writes, else on the primary. */
  #read<T>(providerId: string, onStandby: (standby: Standby) => Promise<PositionedRead<T>>, onPrimary: () => Promise<T>): Promise<T> {
    const standby = this.#standby
    return standby ? standby.reads.read(providerOwner(providerId), () => onStandby(standby), onPrimary) : onPrimary()
  }
}
