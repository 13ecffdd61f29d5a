import { sql, type Kysely } from 'kysely'
import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { ReadYourWrites } from '../db/read-your-writes.js'
import type { Tables } from '../db/tables.js'
import { stateFromRow, STATE_COLUMN_NAMES, type ListingState, type StateRow } from '../listings/listing-state.js'
import {
  candidateParams,
  listingsByKeys,
  postgresCandidatesSql,
  sqliteCandidatesSql,
  unpackCandidates,
  type ActiveFilter,
  type CandidateParams,
  type CandidateRow,
  type PackedCandidates,
  type QueryArea,
} from './spatial-index.js'

export interface DiscoveredState {
  state: ListingState
  industry: string
  soldOut: boolean
}

type StatesRow = StateRow & { industry: string; sold_out: number }

/** A candidate query's shape: without an upper end of expiry (nearest-first), or with one (a window). */
type Shape = 'open' | 'bounded'

const STATE_SELECT = sql.raw(STATE_COLUMN_NAMES.map((name) => `l.${name}`).join(', '))

/**
 * Each read is compiled once: building queries is a large share of a page's CPU. With DATABASE_READ_URL, candidates
 * come from the standby but listings whole from the primary, which the route re-checks, so a withdrawal takes a
 * listing out of the very next query however far behind the standby is.
 */
export class DiscoveryRepository {
  readonly #query: (shape: Shape, params: CandidateParams) => Promise<CandidateRow[]>
  readonly #states: PreparedQuery<{ keys: string }, StatesRow>

  constructor(database: Database, reads?: ReadYourWrites) {
    const { dialect, kysely } = database
    if (dialect === 'sqlite') {
      this.#query = sqliteQuery(database)
    } else {
      const onPrimary = postgresQuery(kysely)
      const onStandby = reads && postgresQuery(reads.replica)
      this.#query = onStandby
        ? (shape, params) =>
            reads.anyReplay(
              () => onStandby(shape, params),
              () => onPrimary(shape, params),
            )
        : onPrimary
    }
    this.#states = new PreparedQuery(
      kysely,
      (_db, param) => sql<StatesRow>`
        select ${STATE_SELECT}, l.sold_out, p.industry
        from ${listingsByKeys(dialect, param('keys'))} join providers p on p.id = l.provider_id`,
    )
  }

  /** On PostgreSQL each request's query is a statement of its own, so no request's failure can fail another's. */
  readonly candidates = (area: QueryArea, filter: ActiveFilter): Promise<CandidateRow[]> =>
    this.#query(filter.expiresUntil === null ? 'open' : 'bounded', candidateParams(area, filter))

  /** The listings with these keys, whole, with their provider's industry; in no particular order. */
  async states(keys: ReadonlyArray<{ providerId: string; id: string }>): Promise<DiscoveredState[]> {
    if (keys.length === 0) return []
    const rows = await this.#states.execute({ keys: JSON.stringify(keys.map(({ providerId, id }) => [providerId, id])) })
    return rows.map(({ industry, sold_out, ...row }) => ({ state: stateFromRow(row), industry, soldOut: sold_out === 1 }))
  }
}

function sqliteQuery({ kysely }: Database): (shape: Shape, params: CandidateParams) => Promise<CandidateRow[]> {
  const statements: Record<Shape, PreparedQuery<CandidateParams, CandidateRow>> = {
    open: new PreparedQuery(kysely, (_db, param) => sqliteCandidatesSql(false, param)),
    bounded: new PreparedQuery(kysely, (_db, param) => sqliteCandidatesSql(true, param)),
  }
  return (shape, params) => statements[shape].execute(params)
}

function postgresQuery(kysely: Kysely<Tables>): (shape: Shape, params: CandidateParams) => Promise<CandidateRow[]> {
  const statements: Record<Shape, PreparedQuery<CandidateParams, PackedCandidates>> = {
    open: new PreparedQuery(kysely, (_db, param) => postgresCandidatesSql(false, param)),
    bounded: new PreparedQuery(kysely, (_db, param) => postgresCandidatesSql(true, param)),
  }
  return async (shape, params) => {
    const [row] = await statements[shape].execute(params)
    return unpackCandidates(row?.packed ?? null)
  }
}
