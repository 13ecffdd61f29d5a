import type { Kysely, QueryCreator, Selectable } from 'kysely'
import { byProvider } from '../by-provider.js'
import type { JobDatabase, Tx } from '../db/connection.js'
import type { ListingsTable, Tables } from '../db/tables.js'
import { commitWithoutFlush, onPostgres, ownerKey } from '../db/dialect.js'
import { perDialect } from '../db/prepared-query.js'
import type { ProblemDetail } from '../errors.js'
import { providerOwner } from '../events/owner.js'
import { LeadingWrite, listingEvent, recordEvents, writeThenRecord, type Lead, type NewEvent } from '../events/record.js'
import type { ReservationEventType } from '../events/types.js'
import { prefixedId } from '../ids.js'
import { preconditionFails, type IfMatch } from '../http/conditional.js'
import { effective, isSoldOut, quantitiesOf, stateFromRow, STATE_COLUMN_NAMES, unknownPositions, type ListingState } from '../listings/listing-state.js'
import { effectiveReservation, linesOf, reservationView, type ReservationRow, type ReservedLine } from './reservation.js'
import type { ReservationStatus, ReservationView } from './schemas.js'
import { availableOf, heldColumns, heldIsExact, shortLines, storedHeld, withLines, type HeldColumns, type Line } from './stock.js'

/*
 * Every change of stock is a transaction that locks the listing first (FOR UPDATE on PostgreSQL; SQLite runs one
 * writer), then writes its reservation rows, the listing's held columns and the events: the units held and the rows
 * that hold them change together, or not at all. Locks are taken in one order: listing, provider, marketplaces.
 */

/** A listing and its holds: as stored, or settled (those run out at an instant taken out). */
export interface Stocked {
  state: ListingState
  held: number[]
  holdsExpireMs: number | null
}

/** The listing row's columns a Stocked is read from (stockedOf). */
export const STOCKED_COLUMNS = [...STATE_COLUMN_NAMES, 'held_record', 'holds_expire_ms'] as const

type StockedRow = Pick<Selectable<ListingsTable>, (typeof STOCKED_COLUMNS)[number]>

export function stockedOf(row: StockedRow): Stocked {
  const state = stateFromRow(row)
  return { state, held: storedHeld(row.held_record, state.items.length), holdsExpireMs: row.holds_expire_ms }
}

/** The listing locked, by its id alone or as the provider's own; compiled once each (the writer thread runs every write). */
const lockQuery = (ofProvider: boolean) =>
  perDialect<{ listingId: string; providerId?: string }, StockedRow>((db, param, dialect) =>
    db
      .selectFrom('listings')
      .select(STOCKED_COLUMNS)
      .where('id', '=', param('listingId'))
      .$if(ofProvider, (qb) => qb.where('provider_id', '=', param('providerId') as string))
      .$if(dialect === 'postgres', (qb) => qb.forUpdate()),
  )
const lockById = lockQuery(false)
const lockOwn = lockQuery(true)

/** The listing locked until the transaction ends; with `providerId`, another provider's is as unknown as none. */
export async function lockStocked(tx: Tx, listingId: string, providerId?: string): Promise<Stocked | undefined> {
  const [row] = await (providerId === undefined ? lockById : lockOwn)(tx).executeIn(tx, { listingId, providerId })
  return row && stockedOf(row)
}

/**
 * The locked listing's holds with those run out at nowMs taken out of the sum (and no longer counted): statements
 * only when one has run out since the last write. The listing row itself is written by the caller.
 */
export async function settled(tx: Tx, stocked: Stocked, nowMs: number): Promise<Stocked & { settledNow: boolean }> {
  if (heldIsExact(stocked.holdsExpireMs, nowMs)) return { ...stocked, settledNow: false }
  const { provider_id, id } = stocked.state
  const runOut = await tx
    .selectFrom('reservations')
    .select(['id', 'items_record'])
    .where('provider_id', '=', provider_id)
    .where('listing_id', '=', id)
    .where('counted', '=', 1)
    .where('expires_at_ms', '<=', nowMs)
    .execute()
  let held = stocked.held
  for (const row of runOut) held = withLines(held, linesOf(row), -1)
  if (runOut.length > 0) {
    const ids = runOut.map((row) => row.id)
    await tx.updateTable('reservations').set({ counted: 0 }).where('provider_id', '=', provider_id).where('id', 'in', ids).execute()
  }
  const next = await tx
    .selectFrom('reservations')
    .select((eb) => eb.fn.min('expires_at_ms').as('first'))
    .where('provider_id', '=', provider_id)
    .where('listing_id', '=', id)
    .where('counted', '=', 1)
    .executeTakeFirst()
  return { state: stocked.state, held, holdsExpireMs: next?.first ?? null, settledNow: true }
}

/** What writeStock sends, by column: the held columns, and with a change of the listing its items and version. */
type StockColumns = HeldColumns & Pick<Selectable<ListingsTable>, 'provider_id' | 'id'>
type ChangeColumns = StockColumns & Pick<Selectable<ListingsTable>, 'version' | 'updated_at_ms' | 'discount_rate' | 'sold_out' | 'items_record'>

const stockUpdate = (db: QueryCreator<Tables>, param: <K extends keyof StockColumns>(name: K) => StockColumns[K]) =>
  db
    .updateTable('listings')
    .set({ held_record: param('held_record'), holds_expire_ms: param('holds_expire_ms'), full_until_ms: param('full_until_ms') })
    .where('provider_id', '=', param('provider_id'))
    .where('id', '=', param('id'))

// Compiled once per dialect: the writer thread runs every write.
const stockWrite = new LeadingWrite<StockColumns>(stockUpdate)
const changeWrite = new LeadingWrite<ChangeColumns>((db, param) =>
  stockUpdate(db, param).set({
    version: param('version'),
    updated_at_ms: param('updated_at_ms'),
    discount_rate: param('discount_rate'),
    sold_out: param('sold_out'),
    items_record: param('items_record'),
  }),
)

/** The write of the listing's held columns, and with `changed` its change (version, items) as well: a change's events follow it. */
export function stockLead({ state, held, holdsExpireMs }: Stocked, changed: boolean): Lead {
  const stock = { provider_id: state.provider_id, id: state.id, ...heldColumns(quantitiesOf(state), held, holdsExpireMs) }
  if (!changed) return stockWrite.of(stock)
  return changeWrite.of({
    ...stock,
    version: state.version,
    updated_at_ms: state.updated_at_ms,
    discount_rate: state.discount_rate,
    sold_out: isSoldOut(state.items) ? 1 : 0,
    items_record: JSON.stringify(state.items),
  })
}

type WithdrawColumns = StockColumns & Pick<Selectable<ListingsTable>, 'version' | 'updated_at_ms' | 'withdrawn_at_ms'>
const withdrawWrite = new LeadingWrite<WithdrawColumns>((db, param) =>
  stockUpdate(db, param).set({ version: param('version'), updated_at_ms: param('updated_at_ms'), withdrawn_at_ms: param('withdrawn_at_ms') }),
)

/** The write of a withdrawal: its version and time, and no unit held any more. */
export function withdrawLead(withdrawn: ListingState): Lead {
  const { provider_id, id, version, updated_at_ms, withdrawn_at_ms } = withdrawn
  return withdrawWrite.of({ provider_id, id, version, updated_at_ms, withdrawn_at_ms, ...heldColumns([], [], null) })
}

/** stockLead's write alone: no event follows it. */
export async function writeStock(tx: Tx, stocked: Stocked, changed: boolean): Promise<void> {
  await stockLead(stocked, changed).alone(tx)
}

const RESERVATION_COLUMNS = [
  'r.provider_id',
  'r.id',
  'r.marketplace_id',
  'r.reference_id',
  'r.request_hash',
  'r.listing_id',
  'r.status',
  'r.version',
  'r.items_record',
  'r.discount_rate',
  'r.created_at_ms',
  'r.updated_at_ms',
  'r.expires_at_ms',
  'r.ended_by',
  'r.counted',
] as const

/** A reservation read with its marketplace's name (the view shows it). */
export function reservationQuery(db: Kysely<Tables>) {
  return db
    .selectFrom('reservations as r')
    .innerJoin('marketplaces as m', 'm.id', 'r.marketplace_id')
    .select([...RESERVATION_COLUMNS, 'm.name as marketplace_name'])
}

/** A reservation's change, as its events tell it. */
interface Change {
  type: ReservationEventType
  view: ReservationView
}

/**
 * One reservation event to the listing's provider and one to the marketplace, provider first (the lock order), after
 * the listing's write (`lead`).
 */
async function recordReservationEvents(tx: Tx, lead: Lead | null, nowMs: number, changes: readonly Change[], listingEvents: NewEvent[] = []) {
  if (changes.length === 0 && listingEvents.length === 0) {
    await lead?.alone(tx)
    return
  }
  const providerId = changes[0]?.view.providerId ?? (listingEvents[0]?.snapshot as ListingState).provider_id
  const events = (list: readonly Change[]) => list.map(({ type, view }) => ({ type, listingId: view.listingId, snapshot: view }))
  await writeThenRecord(tx, lead, providerOwner(providerId), nowMs, [...listingEvents, ...events(changes)])
  const byMarketplace = new Map<string, Change[]>()
  for (const change of changes) byMarketplace.set(change.view.marketplace.id, [...(byMarketplace.get(change.view.marketplace.id) ?? []), change])
  for (const id of [...byMarketplace.keys()].sort()) await recordEvents(tx, { kind: 'marketplace', id }, nowMs, events(byMarketplace.get(id) ?? []))
}

/**
 * Ends reservations of one provider, read under their listing's lock: `status` (and `ended_by`), version + 1, no
 * longer counted, changed at `updated_at_ms` (absent: each at its own expiry). Returns their changes, each an event
 * `reservation.<status>`.
 */
async function writeEnded(
  tx: Tx,
  rows: readonly ReservationRow[],
  end: { status: Exclude<ReservationStatus, 'held'>; ended_by?: ReservationRow['ended_by']; updated_at_ms?: number },
  nowMs: number,
): Promise<Change[]> {
  const [first] = rows
  if (!first) return []
  const ids = rows.map((row) => row.id)
  await tx
    .updateTable('reservations')
    .set((eb) => ({ ...end, version: eb('version', '+', 1), updated_at_ms: end.updated_at_ms ?? eb.ref('expires_at_ms'), counted: 0 }))
    .where('provider_id', '=', first.provider_id)
    .where('id', 'in', ids)
    .execute()
  return rows.map((row) => {
    const ended: ReservationRow = { ...row, ...end, version: row.version + 1, updated_at_ms: end.updated_at_ms ?? row.expires_at_ms, counted: 0 }
    return { type: `reservation.${end.status}` as const, view: reservationView(ended, nowMs) }
  })
}

// ---- Make them ----

export interface HoldArgs {
  marketplace: { id: string; name: string }
  listingId: string
  referenceId: string
  lines: Line[]
  holdSeconds: number
  requestHash: string
  nowMs: number
}

export type HoldOutcome =
  | { kind: 'made' | 'replayed'; reservation: ReservationView }
  | { kind: 'conflict' | 'not-found' }
  | { kind: 'closed'; status: string }
  | { kind: 'invalid' | 'short'; errors: ProblemDetail[] }

/** Thrown when another instance committed one of these referenceIds meanwhile: each hold is then made alone. */
export class ReferenceTaken extends Error {}

const keyOf = (marketplaceId: string, referenceId: string) => JSON.stringify([marketplaceId, referenceId])
const keyOfHold = (hold: HoldArgs) => keyOf(hold.marketplace.id, hold.referenceId)

/** The marketplaces' index entries of these referenceIds. */
export const knownReferencesQuery = (db: Kysely<Tables>, holds: ReadonlyArray<{ marketplaceId: string; referenceId: string }>) =>
  db
    .selectFrom('marketplace_reservations')
    .select(['marketplace_id', 'reference_id', 'provider_id', 'reservation_id'])
    .where((eb) => eb.or(holds.map((hold) => eb.and([eb('marketplace_id', '=', ownerKey(db, hold.marketplaceId)), eb('reference_id', '=', hold.referenceId)]))))

/** The reservations these referenceIds already name, by keyOf. */
async function knownReferences(tx: Tx, holds: readonly HoldArgs[]): Promise<Map<string, ReservationRow>> {
  const known = await knownReferencesQuery(
    tx,
    holds.map((hold) => ({ marketplaceId: hold.marketplace.id, referenceId: hold.referenceId })),
  ).execute()
  const found = new Map<string, ReservationRow>()
  for (const key of known) {
    const row = await reservationQuery(tx).where('r.provider_id', '=', key.provider_id).where('r.id', '=', key.reservation_id).executeTakeFirstOrThrow()
    found.set(keyOf(key.marketplace_id, key.reference_id), row)
  }
  return found
}

const replayOrConflict = (row: ReservationRow, hold: HoldArgs): HoldOutcome =>
  row.request_hash === hold.requestHash ? { kind: 'replayed', reservation: reservationView(row, hold.nowMs) } : { kind: 'conflict' }

/**
 * A write transaction: holds of one listing, each all its lines or none, decided one after the other in the order
 * given, each on the stock the ones before it left; one lock of the listing and one write of each kind for all of
 * them. Each hold's order of work: a known referenceId (replay or conflict), the listing (404, 409 unless active),
 * the positions (400), the stock (409 naming every short line). A hold alone is a list of one.
 */
export async function holdStock(tx: Tx, holds: readonly HoldArgs[]): Promise<HoldOutcome[]> {
  const outcomes: Array<HoldOutcome | undefined> = holds.map(() => undefined)
  const known = await knownReferences(tx, holds)
  const first = holds[0] as HoldArgs
  const { listingId } = first
  const locked = await lockStocked(tx, listingId)
  const stocked = locked && (await settled(tx, locked, first.nowMs))
  let held = stocked?.held ?? []
  let holdsExpireMs = stocked?.holdsExpireMs ?? null
  const made: Array<{ row: ReservationRow; hold: HoldArgs; index: number }> = []
  holds.forEach((hold, index) => {
    const earlier = known.get(keyOfHold(hold))
    if (earlier) return (outcomes[index] = replayOrConflict(earlier, hold))
    if (!stocked || hold.listingId !== listingId) return (outcomes[index] = { kind: 'not-found' })
    const { state } = stocked
    const { status } = effective(state, hold.nowMs)
    if (status !== 'active') return (outcomes[index] = { kind: 'closed', status })
    const errors = unknownPositions(hold.lines, state.items.length)
    if (errors.length > 0) return (outcomes[index] = { kind: 'invalid', errors })
    const short = shortLines(hold.lines, availableOf(quantitiesOf(state), held, true))
    if (short.length > 0) return (outcomes[index] = { kind: 'short', errors: short })
    const expiresAtMs = Math.min(hold.nowMs + hold.holdSeconds * 1000, state.expires_at_unix * 1000)
    const lines: ReservedLine[] = hold.lines.map(({ position, quantity }) => {
      const item = state.items[position] as ListingState['items'][number]
      return { position, quantity, price_thousandths: item.price_thousandths, name_ar: item.name_ar, name_en: item.name_en }
    })
    const row: ReservationRow = {
      provider_id: state.provider_id,
      id: prefixedId('rsv', hold.nowMs),
      marketplace_id: hold.marketplace.id,
      marketplace_name: hold.marketplace.name,
      reference_id: hold.referenceId,
      request_hash: hold.requestHash,
      listing_id: state.id,
      status: 'held',
      version: 1,
      items_record: JSON.stringify(lines),
      discount_rate: state.discount_rate,
      created_at_ms: hold.nowMs,
      updated_at_ms: hold.nowMs,
      expires_at_ms: expiresAtMs,
      ended_by: null,
      counted: 1,
    }
    held = withLines(held, hold.lines, 1)
    holdsExpireMs = Math.min(holdsExpireMs ?? expiresAtMs, expiresAtMs)
    // The same referenceId later in this list is a replay of this one.
    known.set(keyOfHold(hold), row)
    made.push({ row, hold, index })
    return undefined
  })
  if (stocked && (made.length > 0 || stocked.settledNow)) {
    if (made.length > 0) {
      // Another instance may have committed one of these referenceIds since they were read: the key decides.
      const claimed = await tx
        .insertInto('marketplace_reservations')
        .values(
          made.map(({ row }) => ({
            marketplace_id: row.marketplace_id,
            reference_id: row.reference_id,
            reservation_id: row.id,
            provider_id: row.provider_id,
            listing_id: row.listing_id,
            created_at_ms: row.created_at_ms,
          })),
        )
        .onConflict((oc) => oc.columns(['marketplace_id', 'reference_id']).doNothing())
        .returning('reservation_id')
        .execute()
      if (claimed.length < made.length) {
        if (holds.length > 1) throw new ReferenceTaken('a referenceId was taken meanwhile')
        // Alone: the one that committed first is this request's answer; nothing of this one is written.
        if (stocked.settledNow) await writeStock(tx, stocked, false)
        const taken = (await knownReferences(tx, holds)).get(keyOfHold(first))
        return [taken ? replayOrConflict(taken, first) : { kind: 'conflict' }]
      }
      await tx
        .insertInto('reservations')
        .values(made.map(({ row: { marketplace_name: _name, ...stored } }) => stored))
        .execute()
    }
  }
  const lead = stocked && (made.length > 0 || stocked.settledNow) ? stockLead({ state: stocked.state, held, holdsExpireMs }, false) : null
  // A duplicate that committed while these waited for the listing's lock (PostgreSQL; SQLite runs one writer) took
  // the units a refusal found short, or closed nothing: the refused one is its replay.
  const isRefused = (index: number) => ['short', 'closed'].includes(outcomes[index]?.kind ?? '')
  const refused = holds.filter((_, index) => isRefused(index))
  if (refused.length > 0 && onPostgres(tx)) {
    const now = await knownReferences(tx, refused)
    holds.forEach((hold, index) => {
      const twin = isRefused(index) && now.get(keyOfHold(hold))
      if (twin && !made.some((mine) => mine.row.id === twin.id)) outcomes[index] = replayOrConflict(twin, hold)
    })
  }
  // Nothing held: what this transaction wrote (a row lock, run-out holds taken out) the next write makes again, so
  // its commit gives the listing's lock back without waiting for the disk.
  if (made.length === 0) {
    await lead?.alone(tx)
    await commitWithoutFlush(tx)
  }
  const changes = made.map(({ row, hold, index }) => {
    const view = reservationView(row, hold.nowMs)
    outcomes[index] = { kind: 'made', reservation: view }
    return { type: 'reservation.held' as const, view }
  })
  await recordReservationEvents(tx, made.length > 0 ? lead : null, first.nowMs, changes)
  return outcomes as HoldOutcome[]
}

// ---- End one ----

export type Action = 'confirm' | 'release' | 'cancel'

export interface EndArgs {
  actor: { kind: 'provider' | 'marketplace'; id: string }
  reservationId: string
  action: Action
  ifMatch: IfMatch | null
  nowMs: number
}

export type EndOutcome =
  | { kind: 'not-found' }
  | { kind: 'precondition-failed'; version: number }
  | { kind: 'expired' | 'closed'; status: string }
  | { kind: 'done'; reservation: ReservationView }

type Decision = { to: 'confirmed' | 'released' | 'cancelled'; endedBy: ReservationRow['ended_by'] } | { to: null } | { refuse: 'expired' | 'closed' }

/** What an action does to a reservation in its status now: a transition, nothing (already there), or a refusal. */
export function decideEnd(action: Action, status: string, actor: EndArgs['actor']['kind']): Decision {
  switch (action) {
    case 'confirm':
      if (status === 'held') return { to: 'confirmed', endedBy: null }
      if (status === 'confirmed') return { to: null }
      return { refuse: status === 'expired' ? 'expired' : 'closed' }
    case 'release':
      if (status === 'held') return { to: 'released', endedBy: 'marketplace' }
      if (status === 'released' || status === 'expired') return { to: null }
      return { refuse: 'closed' }
    case 'cancel':
      if (status === 'held') return { to: 'released', endedBy: actor }
      if (status === 'confirmed') return { to: 'cancelled', endedBy: actor }
      return { to: null }
  }
}

/**
 * A write transaction: confirm, release or cancel, for the marketplace that made it or (cancel) the listing's
 * provider. Concurrent ones of one reservation take turns on its listing's lock: one wins, the others see its result.
 */
export async function endReservation(tx: Tx, args: EndArgs): Promise<EndOutcome> {
  const key =
    args.actor.kind === 'marketplace'
      ? await tx
          .selectFrom('marketplace_reservations')
          .select(['provider_id', 'listing_id'])
          .where('marketplace_id', '=', args.actor.id)
          .where('reservation_id', '=', args.reservationId)
          .executeTakeFirst()
      : await tx
          .selectFrom('reservations')
          .select(['provider_id', 'listing_id'])
          .where('provider_id', '=', args.actor.id)
          .where('id', '=', args.reservationId)
          .executeTakeFirst()
  if (!key) return { kind: 'not-found' }
  const locked = await lockStocked(tx, key.listing_id, key.provider_id)
  if (!locked) return { kind: 'not-found' }
  const row = await reservationQuery(tx).where('r.provider_id', '=', key.provider_id).where('r.id', '=', args.reservationId).executeTakeFirstOrThrow()
  const { status, version } = effectiveReservation(row, args.nowMs)
  if (preconditionFails(args.ifMatch, version)) return { kind: 'precondition-failed', version }
  const decision = decideEnd(args.action, status, args.actor.kind)
  if ('refuse' in decision) return { kind: decision.refuse, status }
  if (decision.to === null) return { kind: 'done', reservation: reservationView(row, args.nowMs) }

  const lines = linesOf(row)
  const stocked = await settled(tx, locked, args.nowMs)
  let { state } = stocked
  const held = status === 'held' ? withLines(stocked.held, lines, -1) : stocked.held
  const listingStatus = effective(state, args.nowMs).status
  const quantityChange = decision.to === 'confirmed' ? -1 : decision.to === 'cancelled' && (listingStatus === 'active' || listingStatus === 'sold_out') ? 1 : 0
  if (quantityChange !== 0) {
    const quantities = withLines(quantitiesOf(state), lines, quantityChange)
    const items = state.items.map((item, k) => ({ ...item, quantity: quantities[k] ?? item.quantity }))
    state = { ...state, items, version: state.version + 1, updated_at_ms: Math.max(args.nowMs, state.updated_at_ms) }
  }
  const listingEvents = quantityChange === 0 ? [] : [listingEvent('listing.updated', state)]
  const changes = await writeEnded(tx, [row], { status: decision.to, ended_by: decision.endedBy, updated_at_ms: args.nowMs }, args.nowMs)
  const writesStock = status === 'held' || quantityChange !== 0 || stocked.settledNow
  await recordReservationEvents(tx, writesStock ? stockLead({ ...stocked, state, held }, quantityChange !== 0) : null, args.nowMs, changes, listingEvents)
  return { kind: 'done', reservation: (changes[0] as Change).view }
}

// ---- What changes of the listing do to its holds ----

/**
 * A withdrawal of a listing with holds counted, in its transaction: every reservation held now becomes `released` by
 * `listing_withdrawn`, each with its events; none is counted any more (those run out are left to the sweeper, which
 * records them `expired`). The listing is written last (withdrawLead), with the events.
 */
export async function releaseOnWithdraw(tx: Tx, withdrawn: ListingState, nowMs: number, listingEvents: NewEvent[]): Promise<void> {
  const rows = await reservationQuery(tx)
    .where('r.provider_id', '=', withdrawn.provider_id)
    .where('r.listing_id', '=', withdrawn.id)
    .where('r.status', '=', 'held')
    .where('r.expires_at_ms', '>', nowMs)
    .orderBy('r.created_at_ms')
    .orderBy('r.id')
    .execute()
  const released = await writeEnded(tx, rows, { status: 'released', ended_by: 'listing_withdrawn', updated_at_ms: nowMs }, nowMs)
  await tx
    .updateTable('reservations')
    .set({ counted: 0 })
    .where('provider_id', '=', withdrawn.provider_id)
    .where('listing_id', '=', withdrawn.id)
    .where('counted', '=', 1)
    .execute()
  await recordReservationEvents(tx, withdrawLead(withdrawn), nowMs, released, listingEvents)
}

// ---- Expiries ----

/**
 * A write transaction: records the expiry of a provider's reservations among `ids` still held and run out when their
 * listing is locked (another instance may have recorded them, or the marketplace ended them, since they were found).
 * Each: status `expired`, version + 1, changed at its expiry, no longer counted, with its events. Returns how many.
 */
export async function recordHoldExpiries(tx: Tx, providerId: string, ids: readonly string[], nowMs: number): Promise<number> {
  const due = await tx.selectFrom('reservations').select(['listing_id']).distinct().where('provider_id', '=', providerId).where('id', 'in', ids).execute()
  const changes: Change[] = []
  for (const listingId of due.map((row) => row.listing_id).sort()) {
    const locked = await lockStocked(tx, listingId, providerId)
    if (!locked) continue
    const stocked = await settled(tx, locked, nowMs)
    if (stocked.settledNow) await writeStock(tx, stocked, false)
    const rows = await reservationQuery(tx)
      .where('r.provider_id', '=', providerId)
      .where('r.listing_id', '=', listingId)
      .where('r.id', 'in', ids)
      .where('r.status', '=', 'held')
      .where('r.expires_at_ms', '<=', nowMs)
      .orderBy('r.expires_at_ms')
      .orderBy('r.id')
      .execute()
    changes.push(...(await writeEnded(tx, rows, { status: 'expired' }, nowMs)))
  }
  await recordReservationEvents(tx, null, nowMs, changes)
  return changes.length
}

/**
 * Records up to `limit` hold expiries that are due: found by one read that locks nothing, then each provider's in a
 * transaction of its own (recordHoldExpiries checks each again under its listing's lock). Returns how many.
 */
export async function expireDueHolds({ db, transact }: JobDatabase, { nowMs, limit }: { nowMs: number; limit: number }): Promise<number> {
  const due = await db
    .selectFrom('reservations')
    .select(['provider_id', 'id'])
    .where('status', '=', 'held')
    .where('expires_at_ms', '<=', nowMs)
    .orderBy('expires_at_ms')
    .limit(limit)
    .execute()
  let recorded = 0
  for (const [providerId, rows] of byProvider(due, 'provider_id')) {
    const ids = rows.map((row) => row.id)
    recorded += await transact(recordHoldExpiries, providerId, ids, nowMs)
  }
  return recorded
}
