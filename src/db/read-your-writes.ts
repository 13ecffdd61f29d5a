import type { Kysely } from 'kysely'
import { ownerTable, type Owner } from '../events/owner.js'
import { isDatabaseUnavailable } from './dialect.js'
import { PreparedQuery } from './prepared-query.js'
import type { Tables } from './tables.js'
import { TrailingBatches } from '../trailing-batches.js'

/*
 * Standby reads that never show an owner (a provider, or a marketplace) an older state than one it has been told
 * of. An owner's position is its `event_count`: every transaction that changes its data records an event in its
 * stream and so bumps it (a provider's listings; a marketplace's reservations, whoever changes them). A standby
 * read reads the position in the same statement, hence the same snapshot; the primary's, read at the same time,
 * covers every write acknowledged before the request. The standby's answer is used when its position is not below
 * the primary's.
 */

/** A standby read's answer and the owner's position in its snapshot (undefined: the owner is not there yet). */
export interface PositionedRead<T> {
  position: number | undefined
  value: T
}

/**
 * Who answered a read meant for the standby: `replica`; `primary-behind` (the standby had not replayed the
 * owner's writes, or could not tell); `primary-failed` (the standby was unavailable).
 */
export type ReplicaReadOutcome = 'replica' | 'primary-behind' | 'primary-failed'

export class ReadYourWrites {
  /**
   * The primary's position of an owner, by kind. Reads that arrive while its lookup runs share the next one, which
   * starts after them and so covers their writes: an owner polled by many clients costs one lookup per round trip.
   */
  readonly #positions: Record<Owner['kind'], TrailingBatches<null, number | undefined>>

  constructor(
    primary: Kysely<Tables>,
    /** Repositories build their standby statements on this. */
    readonly replica: Kysely<Tables>,
    private readonly observe: (outcome: ReplicaReadOutcome) => void = () => {},
  ) {
    const positions = (kind: Owner['kind']) => {
      const position = new PreparedQuery<{ ownerId: string }, { event_count: number }>(primary, (db, param) =>
        db.selectFrom(ownerTable[kind]).select('event_count').where('id', '=', param('ownerId')),
      )
      return new TrailingBatches<null, number | undefined>(async (reads, ownerId) => {
        const [row] = await position.execute({ ownerId })
        return reads.map(() => ({ ok: true, value: row?.event_count }))
      })
    }
    this.#positions = { provider: positions('provider'), marketplace: positions('marketplace') }
  }

  /**
   * `fromReplica`'s answer when the standby holds every write of `owner` committed before this call, else
   * `fromPrimary`'s. `fromReplica` answers undefined when the standby cannot tell (a cursor it does not know yet).
   */
  async read<T>(owner: Owner, fromReplica: () => Promise<PositionedRead<T> | undefined>, fromPrimary: () => Promise<T>): Promise<T> {
    const [required, replica] = await Promise.all([this.#positions[owner.kind].submit(owner.id, null), this.#orUnavailable(fromReplica())])
    if (replica === 'unavailable') return this.#answer('primary-failed', fromPrimary)
    if (replica === undefined || replica.position === undefined || required === undefined || replica.position < required) {
      return this.#answer('primary-behind', fromPrimary)
    }
    this.observe('replica')
    return replica.value
  }

  /** For reads whose freshness is checked on the primary afterwards (discovery's candidates). */
  async anyReplay<T>(fromReplica: () => Promise<T>, fromPrimary: () => Promise<T>): Promise<T> {
    const replica = await this.#orUnavailable(fromReplica())
    if (replica === 'unavailable') return this.#answer('primary-failed', fromPrimary)
    this.observe('replica')
    return replica
  }

  /**
   * A standby that is down, or that cancels a read in conflict with replay (40001), leaves the read to the
   * primary rather than answering 503: the primary can serve it.
   */
  async #orUnavailable<T>(read: Promise<T>): Promise<T | 'unavailable'> {
    try {
      return await read
    } catch (error) {
      if (isDatabaseUnavailable(error)) return 'unavailable'
      throw error
    }
  }

  #answer<T>(outcome: ReplicaReadOutcome, fromPrimary: () => Promise<T>): Promise<T> {
    this.observe(outcome)
    return fromPrimary()
  }
}
