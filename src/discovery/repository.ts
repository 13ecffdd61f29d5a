import { sql } from 'kysely'
import type { Database } from '../db/connection.js'
import { stateFromRow, STATE_COLUMN_NAMES, type ListingState, type StateRow } from '../listings/listing-state.js'
import { candidatesQuery, type ActiveFilter, type CandidateRow, type IndexBox } from './spatial-index.js'

export interface DiscoveredState {
  state: ListingState
  industry: string
  soldOut: boolean
}

const STATE_SELECT = sql.raw(STATE_COLUMN_NAMES.map((name) => `l.${name}`).join(', '))

/** Discovery's two reads: candidates from the spatial index, then the chosen listings whole. */
export class DiscoveryRepository {
  constructor(private readonly database: Database) {}

  readonly candidates = async (box: IndexBox, filter: ActiveFilter): Promise<CandidateRow[]> =>
    (await candidatesQuery(this.database.dialect, box, filter).execute(this.database.kysely)).rows

  /** The listings with these ids, whole, with their provider's industry; in no particular order. */
  async states(ids: readonly string[]): Promise<DiscoveredState[]> {
    if (ids.length === 0) return []
    const { rows } = await sql<StateRow & { industry: string; sold_out: number }>`
      select ${STATE_SELECT}, l.sold_out, p.industry
      from listings l join providers p on p.id = l.provider_id
      where l.id in (${sql.join(ids)})`.execute(this.database.kysely)
    return rows.map(({ industry, sold_out, ...row }) => ({ state: stateFromRow(row), industry, soldOut: sold_out === 1 }))
  }
}
