import { sql } from 'kysely'
import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { SqliteReadThread } from '../db/sqlite-read-thread.js'
import { stateFromRow, STATE_COLUMN_NAMES, type ListingState, type StateRow } from '../listings/listing-state.js'
import { candidateParams, candidateRows, candidatesSql, idInJsonArray, type ActiveFilter, type CandidateParams, type CandidateRow, type PackedCandidates, type QueryArea } from './spatial-index.js'

export interface DiscoveredState {
  state: ListingState
  industry: string
  soldOut: boolean
}

type StatesRow = StateRow & { industry: string; sold_out: number }

const STATE_SELECT = sql.raw(STATE_COLUMN_NAMES.map((name) => `l.${name}`).join(', '))

/**
 * Discovery's two reads: candidates from the spatial index, then the chosen listings whole. Each is a query of
 * fixed text, compiled once (PreparedQuery): building queries was a quarter of a page request's CPU.
 */
export class DiscoveryRepository {
  readonly #open: PreparedQuery<CandidateParams, CandidateRow | PackedCandidates>
  readonly #bounded: PreparedQuery<CandidateParams, CandidateRow | PackedCandidates>
  readonly #states: PreparedQuery<{ ids: string }, StatesRow>
  readonly #reads: SqliteReadThread | undefined

  constructor(database: Database) {
    const { dialect, kysely } = database
    this.#reads = database.sqlite?.reads
    this.#open = new PreparedQuery(kysely, (_db, param) => candidatesSql(dialect, false, param))
    this.#bounded = new PreparedQuery(kysely, (_db, param) => candidatesSql(dialect, true, param))
    this.#states = new PreparedQuery(
      kysely,
      (_db, param) => sql<StatesRow>`
        select ${STATE_SELECT}, l.sold_out, p.industry
        from listings l join providers p on p.id = l.provider_id
        where ${idInJsonArray(dialect, param('ids'))}`,
    )
  }

  /**
   * On a SQLite file, the candidate query runs on the reader thread: it is most of a discovery request's cost,
   * and on the event loop it saturated it (db/sqlite-read-thread.ts). The listings read whole stay on the main
   * connection: with the page's text cache (listing-json.ts) they are few.
   */
  readonly candidates = async (area: QueryArea, filter: ActiveFilter): Promise<CandidateRow[]> => {
    const query = filter.expiresUntil === null ? this.#open : this.#bounded
    const params = candidateParams(area, filter)
    if (!this.#reads) return candidateRows(await query.execute(params))
    const { sql, parameters } = query.bind(params)
    return candidateRows(await this.#reads.all<CandidateRow>(sql, parameters))
  }

  /** The listings with these ids, whole, with their provider's industry; in no particular order. */
  async states(ids: readonly string[]): Promise<DiscoveredState[]> {
    if (ids.length === 0) return []
    const rows = await this.#states.execute({ ids: JSON.stringify(ids) })
    return rows.map(({ industry, sold_out, ...row }) => ({ state: stateFromRow(row), industry, soldOut: sold_out === 1 }))
  }
}
