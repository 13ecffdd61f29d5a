import type { Kysely } from 'kysely'
import type { Tables } from '../db/tables.js'
import type { CursorKey } from '../discovery/cursor.js'
import { effective, quantitiesOf } from '../listings/listing-state.js'
import type { Principal } from '../providers/repository.js'
import { linesOf, reservationView, type ReservationRow } from './reservation.js'
import type { ReservationStatus, ReservationView, StockView } from './schemas.js'
import { availableOf, heldIsExact, withLines } from './stock.js'
import { reservationQuery, STOCKED_COLUMNS, stockedOf } from './transactions.js'

/**
 * Reservations and stock as read, always on the primary: a marketplace acts on what it just did, and a hold that
 * runs out frees its units at that instant, which a standby that lags could not show.
 */
export class ReservationRepository {
  constructor(private readonly db: Kysely<Tables>) {}

  /** The caller's reservation: one it made, or one on its listings; anyone else's is as unknown as none. */
  async findOne(principal: Principal, id: string, nowMs: number): Promise<ReservationView | undefined> {
    const row =
      principal.kind === 'provider'
        ? await reservationQuery(this.db).where('r.provider_id', '=', principal.provider.id).where('r.id', '=', id).executeTakeFirst()
        : await reservationQuery(this.db)
            .innerJoin('marketplace_reservations as mr', (join) => join.onRef('mr.provider_id', '=', 'r.provider_id').onRef('mr.reservation_id', '=', 'r.id'))
            .where('mr.marketplace_id', '=', principal.marketplace.id)
            .where('mr.reservation_id', '=', id)
            .executeTakeFirst()
    return row && reservationView(row, nowMs)
  }

  /** Newest first (createdAt, then id, descending), after `after`; `limit + 1` rows say whether more follow. */
  async page(
    principal: Principal,
    query: { status?: ReservationStatus | undefined; listingId?: string | undefined; limit: number; after?: CursorKey | undefined },
    nowMs: number,
  ): Promise<ReservationRow[]> {
    const { status, listingId, limit, after } = query
    let select =
      principal.kind === 'provider'
        ? reservationQuery(this.db).where('r.provider_id', '=', principal.provider.id)
        : reservationQuery(this.db)
            .innerJoin('marketplace_reservations as mr', (join) => join.onRef('mr.provider_id', '=', 'r.provider_id').onRef('mr.reservation_id', '=', 'r.id'))
            .where('mr.marketplace_id', '=', principal.marketplace.id)
    if (listingId !== undefined) select = select.where('r.listing_id', '=', listingId)
    // A held reservation is expired from its expiry on, recorded or not.
    if (status === 'held') select = select.where('r.status', '=', 'held').where('r.expires_at_ms', '>', nowMs)
    else if (status === 'expired')
      select = select.where((eb) => eb.or([eb('r.status', '=', 'expired'), eb.and([eb('r.status', '=', 'held'), eb('r.expires_at_ms', '<=', nowMs)])]))
    else if (status !== undefined) select = select.where('r.status', '=', status)
    if (after) {
      select = select.where((eb) => eb.or([eb('r.created_at_ms', '<', after.key), eb.and([eb('r.created_at_ms', '=', after.key), eb('r.id', '<', after.id)])]))
    }
    return select
      .orderBy('r.created_at_ms', 'desc')
      .orderBy('r.id', 'desc')
      .limit(limit + 1)
      .execute()
  }

  /**
   * A listing's stock now: for its provider, or for any marketplace while it is active (otherwise as unknown as
   * none). Holds run out since the last write are taken out here, so the figures are exact at nowMs.
   */
  async stock(principal: Principal, listingId: string, nowMs: number): Promise<StockView | undefined> {
    const row = await this.db
      .selectFrom('listings')
      .select(STOCKED_COLUMNS)
      .where('id', '=', listingId)
      .$if(principal.kind === 'provider', (qb) => qb.where('provider_id', '=', principal.kind === 'provider' ? principal.provider.id : ''))
      .executeTakeFirst()
    if (!row) return undefined
    const { state, held: asStored, holdsExpireMs } = stockedOf(row)
    const { status, version } = effective(state, nowMs)
    if (principal.kind === 'marketplace' && status !== 'active') return undefined
    let held = asStored
    if (!heldIsExact(holdsExpireMs, nowMs)) {
      // Past the first counted expiry the stored sum holds run-out holds, which a writer may take out meanwhile: the
      // holds still running, summed, are exact whatever it did (a while after an expiry, until the sweeper comes).
      const running = await this.db
        .selectFrom('reservations')
        .select('items_record')
        .where('provider_id', '=', state.provider_id)
        .where('listing_id', '=', state.id)
        .where('counted', '=', 1)
        .where('expires_at_ms', '>', nowMs)
        .execute()
      held = state.items.map(() => 0)
      for (const reservation of running) held = withLines(held, linesOf(reservation), 1)
    }
    const available = availableOf(quantitiesOf(state), held, status === 'active')
    return {
      listingId: state.id,
      version,
      items: state.items.map((item, k) => ({ position: item.position, quantity: item.quantity, held: held[k] ?? 0, available: available[k] ?? 0 })),
    }
  }
}
