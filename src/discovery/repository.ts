import { sql, type Kysely } from 'kysely'
import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { ReadYourWrites } from '../db/read-your-writes.js'
import type { Tables } from '../db/tables.js'
import { stateFromRow, STATE_COLUMN_NAMES, type ListingState, type StateRow } from '../listings/listing-state.js'
import { siblingModule, ThreadRequests } from '../start-worker.js'
import { aloneOnFailure, TrailingBatches } from '../trailing-batches.js'
import { linesOf } from '../reservations/reservation.js'
import { withLines } from '../reservations/stock.js'
import { search, type Candidates, type Hit, type SearchQuery } from './search.js'
import {
  candidateBatch,
  candidateParams,
  listingsByKeys,
  postgresCandidatesSql,
  sqliteCandidatesSql,
  unpackCandidates,
  type CandidateParams,
  type CandidateRow,
  type PackedCandidates,
} from './spatial-index.js'

export interface DiscoveredState {
  state: ListingState
  industry: string
  soldOut: boolean
}

type StatesRow = StateRow & { industry: string; sold_out: number }

/** What a standby's candidate is now, on the primary. */
interface CurrentRow {
  id: string
  version: number
  discount_rate: number
  held_record: string | null
  holds_expire_ms: number | null
  full_until_ms: number | null
}

/** A candidate query's shape: without an upper end of expiry (nearest-first), or with one (a window). */
type Shape = 'open' | 'bounded'

/** PostgreSQL: at most this many candidate queries in one statement, and this many statements at once per shape. */
const MAX_BATCH = 32
const MAX_RUNNING = 2

const STATE_SELECT = sql.raw(STATE_COLUMN_NAMES.map((name) => `l.${name}`).join(', '))

/**
 * Each read is compiled once: building queries is a large share of a page's CPU. On a SQLite file a whole search runs
 * on a thread of its own (sqlite-search-worker.ts), with every candidate query it asks: off the event loop. With
 * DATABASE_READ_URL, candidates come from the standby but listings whole from the primary, which the route
 * re-checks, so a withdrawal takes a listing out of the very next query however far behind the standby is.
 */
export class DiscoveryRepository {
  /** The first `limit + 1` matching listings after the cursor, in order (search.ts). */
  readonly search: (query: SearchQuery) => Promise<Hit[]>
  /** One candidate query, here: on PostgreSQL batched with those that arrive together. */
  readonly candidates: Candidates
  readonly #states: PreparedQuery<{ keys: string }, StatesRow>
  readonly #current?: PreparedQuery<{ keys: string }, CurrentRow>
  readonly #thread?: ThreadRequests<SearchQuery>
  readonly #primary: Kysely<Tables>

  constructor(database: Database, reads?: ReadYourWrites) {
    const { dialect, kysely } = database
    this.#primary = kysely
    if (dialect === 'sqlite') {
      this.candidates = sqliteCandidates(kysely)
    } else {
      const onPrimary = postgresQuery(kysely)
      const onStandby = reads && postgresQuery(reads.replica)
      if (onStandby) {
        this.#current = new PreparedQuery(
          kysely,
          (_db, param) => sql<CurrentRow>`
            select l.id, l.version, l.discount_rate, l.held_record, l.holds_expire_ms, l.full_until_ms from ${listingsByKeys(dialect, param('keys'))}
            where l.withdrawn_at_ms is null and l.sold_out = 0`,
        )
      }
      const query = onStandby
        ? (shape: Shape, queries: CandidateParams[]) =>
            reads.anyReplay(
              () => onStandby(shape, queries),
              () => onPrimary(shape, queries),
            )
        : onPrimary
      // The candidate queries of one shape that arrive while a statement runs go together as the next one (never
      // answered by a statement that began before them). Should that statement fail, each query is asked alone
      // (aloneOnFailure): one request's query never fails another's.
      const batches = new TrailingBatches<CandidateParams, CandidateRow[]>(
        aloneOnFailure((queries, shape) => query(shape as Shape, queries)),
        { maxBatch: MAX_BATCH, maxRunning: MAX_RUNNING },
      )
      this.candidates = (area, filter) => batches.submit(filter.expiresUntil === null ? 'open' : 'bounded', candidateParams(area, filter))
    }
    const path = database.sqlite?.path
    if (path !== undefined && path !== ':memory:') {
      const thread = (this.#thread = new ThreadRequests<SearchQuery>(siblingModule(import.meta.url, 'sqlite-search-worker'), { path }))
      this.search = (query) => thread.ask(query) as Promise<Hit[]>
    } else {
      this.search = (query) => search(query, this.candidates)
    }
    this.#states = new PreparedQuery(
      kysely,
      (_db, param) => sql<StatesRow>`
        select ${STATE_SELECT}, l.sold_out, p.industry
        from ${listingsByKeys(dialect, param('keys'))} join providers p on p.id = l.provider_id`,
    )
  }

  /** The listings with these keys, whole, with their provider's industry; in no particular order. */
  async states(keys: ReadonlyArray<{ providerId: string; id: string }>): Promise<DiscoveredState[]> {
    if (keys.length === 0) return []
    const rows = await this.#states.execute({ keys: JSON.stringify(keys.map(({ providerId, id }) => [providerId, id])) })
    return rows.map((row) => ({ state: stateFromRow(row), industry: row.industry, soldOut: row.sold_out === 1 }))
  }

  /**
   * The hits as they are now. Candidates from a standby may be behind: each is looked up on the primary, and those
   * withdrawn, sold out or discounted less since are left out, so that what the route sends is what the primary holds.
   */
  async current(hits: readonly Hit[], minDiscountRate: number, nowMs: number): Promise<Hit[]> {
    if (!this.#current || hits.length === 0) return [...hits]
    const rows = await this.#current.execute({ keys: JSON.stringify(hits.map(({ providerId, id }) => [providerId, id])) })
    const now = new Map(
      rows.filter((row) => row.discount_rate >= minDiscountRate && !(row.full_until_ms !== null && nowMs < row.full_until_ms)).map((row) => [row.id, row]),
    )
    return hits.flatMap((hit) => {
      const row = now.get(hit.id)
      return row === undefined ? [] : [{ ...hit, version: row.version, heldRecord: row.held_record, holdsExpireMs: row.holds_expire_ms }]
    })
  }

  /** Per listing, the units by position of its holds counted but run out at nowMs (on the primary, where holds are written). */
  async runOutHolds(hits: readonly Hit[], nowMs: number): Promise<Map<string, number[]>> {
    const rows = await this.#primary
      .selectFrom('reservations')
      .select(['listing_id', 'items_record'])
      .where((eb) => eb.or(hits.map((hit) => eb.and([eb('provider_id', '=', hit.providerId), eb('listing_id', '=', hit.id)]))))
      .where('counted', '=', 1)
      .where('expires_at_ms', '<=', nowMs)
      .execute()
    const runOut = new Map<string, number[]>()
    for (const row of rows) runOut.set(row.listing_id, withLines(runOut.get(row.listing_id) ?? [], linesOf(row), 1))
    return runOut
  }

  close(): Promise<void> {
    return this.#thread?.close() ?? Promise.resolve()
  }
}

/** SQLite's candidate queries on a connection: the main one (an in-memory database), or the search thread's. */
export function sqliteCandidates(kysely: Kysely<Tables>): Candidates {
  const statements: Record<Shape, PreparedQuery<CandidateParams, CandidateRow>> = {
    open: new PreparedQuery(kysely, (_db, param) => sqliteCandidatesSql(false, param)),
    bounded: new PreparedQuery(kysely, (_db, param) => sqliteCandidatesSql(true, param)),
  }
  return (area, filter) => statements[filter.expiresUntil === null ? 'open' : 'bounded'].execute(candidateParams(area, filter))
}

/** PostgreSQL: a batch of candidate queries of one shape, one statement; identical queries in it are asked once. */
function postgresQuery(kysely: Kysely<Tables>): (shape: Shape, queries: CandidateParams[]) => Promise<CandidateRow[][]> {
  const statements: Record<Shape, PreparedQuery<{ batch: string }, PackedCandidates>> = {
    open: new PreparedQuery(kysely, (_db, param) => postgresCandidatesSql(false, param)),
    bounded: new PreparedQuery(kysely, (_db, param) => postgresCandidatesSql(true, param)),
  }
  return async (shape, queries) => {
    const positions = new Map<string, number>()
    const unique: CandidateParams[] = []
    const asked = queries.map((params) => {
      const text = JSON.stringify(params)
      let position = positions.get(text)
      if (position === undefined) positions.set(text, (position = unique.push(params) - 1))
      return position
    })
    const rows = await statements[shape].execute({ batch: candidateBatch(unique) })
    if (rows.length !== unique.length) throw new Error(`a candidate batch of ${unique.length} queries answered ${rows.length} rows`)
    const answers = rows.map((row) => unpackCandidates(row.packed))
    return asked.map((position) => answers[position] as CandidateRow[])
  }
}
