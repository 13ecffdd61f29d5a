import { sql } from 'kysely'
import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { SqliteReadThread } from '../db/sqlite-read-thread.js'
import { stateFromRow, STATE_COLUMN_NAMES, type ListingState, type StateRow } from '../listings/listing-state.js'
import { TrailingBatches } from '../trailing-batches.js'
import {
  candidateBatch,
  candidateParams,
  idInJsonArray,
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

type SqliteCandidateQueries = Record<'open' | 'bounded', PreparedQuery<CandidateParams, CandidateRow>>

/** PostgreSQL: at most this many candidate queries in one statement, and this many statements at once per shape. */
const MAX_BATCH = 32
const MAX_RUNNING = 2

const STATE_SELECT = sql.raw(STATE_COLUMN_NAMES.map((name) => `l.${name}`).join(', '))

/**
 * Discovery's two reads: candidates from the spatial index, then the chosen listings whole. Each is a query of
 * fixed text, compiled once (PreparedQuery): building queries was a quarter of a page request's CPU.
 */
export class DiscoveryRepository {
  /** SQLite: the candidate query without and with an upper end of expiry. */
  readonly #sqlite?: SqliteCandidateQueries
  /** PostgreSQL: candidate queries that arrive together go as one statement, per shape (open, bounded). */
  readonly #postgres?: Record<'open' | 'bounded', TrailingBatches<CandidateParams, CandidateRow[]>>
  readonly #states: PreparedQuery<{ ids: string }, StatesRow>
  readonly #reads: SqliteReadThread | undefined

  constructor(database: Database) {
    const { dialect, kysely } = database
    this.#reads = database.sqlite?.reads
    if (dialect === 'sqlite') {
      this.#sqlite = {
        open: new PreparedQuery(kysely, (_db, param) => sqliteCandidatesSql(false, param)),
        bounded: new PreparedQuery(kysely, (_db, param) => sqliteCandidatesSql(true, param)),
      }
    } else {
      const batches = (bounded: boolean) => {
        const statement = new PreparedQuery<{ batch: string }, PackedCandidates>(kysely, (_db, param) => postgresCandidatesSql(bounded, param))
        return new TrailingBatches<CandidateParams, CandidateRow[]>(
          async (queries) => {
            const rows = await statement.execute({ batch: candidateBatch(queries) })
            return rows.map((row) => ({ ok: true, value: unpackCandidates(row.packed) }))
          },
          { maxBatch: MAX_BATCH, maxRunning: MAX_RUNNING },
        )
      }
      this.#postgres = { open: batches(false), bounded: batches(true) }
    }
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
   * and on the event loop it saturated it (db/sqlite-read-thread.ts). On PostgreSQL, the queries that arrive
   * while a statement runs go together as the next one (TrailingBatches: never answered by a statement that began
   * before them). The listings read whole stay on the main connection: with the page's text cache
   * (listing-json.ts) they are few.
   */
  readonly candidates = (area: QueryArea, filter: ActiveFilter): Promise<CandidateRow[]> => {
    const shape = filter.expiresUntil === null ? 'open' : 'bounded'
    const params = candidateParams(area, filter)
    if (this.#postgres) return this.#postgres[shape].submit(shape, params)
    const query = (this.#sqlite as SqliteCandidateQueries)[shape]
    if (!this.#reads) return query.execute(params)
    const { sql, parameters } = query.bind(params)
    return this.#reads.all<CandidateRow>(sql, parameters)
  }

  /** The listings with these ids, whole, with their provider's industry; in no particular order. */
  async states(ids: readonly string[]): Promise<DiscoveredState[]> {
    if (ids.length === 0) return []
    const rows = await this.#states.execute({ ids: JSON.stringify(ids) })
    return rows.map(({ industry, sold_out, ...row }) => ({ state: stateFromRow(row), industry, soldOut: sold_out === 1 }))
  }
}
