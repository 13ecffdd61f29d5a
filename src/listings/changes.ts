import { byProvider } from '../by-provider.js'
import type { JobDatabase, Tx } from '../db/connection.js'
import { onPostgres } from '../db/dialect.js'
import type { ProblemDetail } from '../errors.js'
import { providerOwner } from '../events/owner.js'
import { listingEvent, recordEvents, writeThenRecord } from '../events/record.js'
import { toThousandths, type ItemColumns } from './columns.js'
import { effective, stateFromRow, STATE_COLUMN_NAMES, unknownPositions, type ListingState } from './listing-state.js'
import type { PatchListingInput } from './schemas.js'
import { preconditionFails, type IfMatch } from '../http/conditional.js'
import { lockStocked, releaseOnWithdraw, settled, stockLead, withdrawLead, writeStock } from '../reservations/transactions.js'
import { belowHeld } from '../reservations/stock.js'

/*
 * Each rule is a plain function of the listing as it is; each change is one transaction that reads the listing
 * locked (FOR UPDATE on PostgreSQL: concurrent changes of one listing, from any instance, take turns), decides,
 * writes the listing and its event. Nothing is written unless something changes.
 */

export type ChangeOutcome =
  | { kind: 'not-found' }
  | { kind: 'precondition-failed'; version: number }
  | { kind: 'closed'; status: 'expired' | 'withdrawn' }
  | { kind: 'invalid'; errors: ProblemDetail[] }
  | { kind: 'insufficient'; errors: ProblemDetail[] }
  | { kind: 'done'; listing: ListingState; changed: boolean }

export interface ChangeArgs {
  providerId: string
  listingId: string
  ifMatch: IfMatch | null
  nowMs: number
}

export interface PatchArgs extends ChangeArgs {
  patch: PatchListingInput
}

// ---- The rules ----

/**
 * What the validator cannot say of a PATCH body alone, all at once as validation reports it: that it changes
 * something, that each item entry does, and that no position is given twice. Checked before the listing is read.
 */
export function patchBodyProblems(patch: PatchListingInput): ProblemDetail[] {
  const problems: ProblemDetail[] = []
  if (patch.listingDetails === undefined && patch.items === undefined) {
    problems.push({ pointer: '', detail: 'must change something: listingDetails.discountRate, items[].quantity or items[].price' })
  }
  const seen = new Set<number>()
  patch.items?.forEach((item, k) => {
    if (item.quantity === undefined && item.price === undefined) {
      problems.push({ pointer: `/items/${k}`, detail: 'must change quantity, price or both' })
    }
    if (seen.has(item.position)) problems.push({ pointer: `/items/${k}/position`, detail: 'is given more than once' })
    seen.add(item.position)
  })
  return problems
}

/** The listing with `patch` applied, or null when every value given is already the current one. */
export function applyPatch(state: ListingState, patch: PatchListingInput): ListingState | null {
  let changed = false
  const discountRate = patch.listingDetails?.discountRate ?? state.discount_rate
  if (discountRate !== state.discount_rate) changed = true
  const items = state.items.map((item) => ({ ...item }))
  for (const change of patch.items ?? []) {
    const item = items[change.position] as ItemColumns
    if (change.quantity !== undefined && change.quantity !== item.quantity) {
      item.quantity = change.quantity
      changed = true
    }
    if (change.price !== undefined && toThousandths(change.price) !== item.price_thousandths) {
      item.price_thousandths = toThousandths(change.price)
      changed = true
    }
  }
  return changed ? { ...state, discount_rate: discountRate, items } : null
}

/** A change's version and time: the next version, at `nowMs` but never before the last change. */
function nextVersion(state: ListingState, nowMs: number): Pick<ListingState, 'version' | 'updated_at_ms'> {
  return { version: state.version + 1, updated_at_ms: Math.max(nowMs, state.updated_at_ms) }
}

/**
 * What a PATCH does to a listing at `nowMs`, in the order its checks are made (after the body's own,
 * patchBodyProblems): the listing exists (404), If-Match names its version (412: RFC 9110 evaluates a
 * precondition before anything else about the request), it is still open (409), every position names one of its
 * items (400); then a body whose values are all the current ones changes nothing.
 */
export function decidePatch(state: ListingState | undefined, { ifMatch, nowMs, patch }: PatchArgs): ChangeOutcome {
  if (!state) return { kind: 'not-found' }
  const { status, version } = effective(state, nowMs)
  if (preconditionFails(ifMatch, version)) return { kind: 'precondition-failed', version }
  if (status === 'expired' || status === 'withdrawn') return { kind: 'closed', status }
  const errors = unknownPositions(patch.items ?? [], state.items.length)
  if (errors.length > 0) return { kind: 'invalid', errors }
  const patched = applyPatch(state, patch)
  if (!patched) return { kind: 'done', listing: state, changed: false }
  return { kind: 'done', listing: { ...patched, ...nextVersion(state, nowMs) }, changed: true }
}

/** Withdrawal is final; withdrawing again changes nothing. An expired listing stays expired. */
export function decideWithdraw(state: ListingState | undefined, { ifMatch, nowMs }: ChangeArgs): ChangeOutcome {
  if (!state) return { kind: 'not-found' }
  const { status, version } = effective(state, nowMs)
  if (preconditionFails(ifMatch, version)) return { kind: 'precondition-failed', version }
  if (status === 'withdrawn') return { kind: 'done', listing: state, changed: false }
  if (status === 'expired') return { kind: 'closed', status }
  return { kind: 'done', listing: { ...state, ...nextVersion(state, nowMs), withdrawn_at_ms: nowMs }, changed: true }
}

/** A listing once its expiry is recorded: version + 1, changed at the moment of expiry. */
export function expiredState(state: ListingState): ListingState {
  return { ...state, version: state.version + 1, updated_at_ms: state.expires_at_unix * 1000, expiry_recorded: 1 }
}

// ---- The transactions ----

/**
 * A write transaction (database.transact). Units held by reservations stay: a quantity below its item's held units
 * is refused (409), after every other check.
 */
export async function patchListing(tx: Tx, args: PatchArgs): Promise<ChangeOutcome> {
  const locked = await lockStocked(tx, args.listingId, args.providerId)
  const outcome = decidePatch(locked?.state, args)
  if (outcome.kind !== 'done' || !locked) return outcome
  const stocked = await settled(tx, locked, args.nowMs)
  const below = belowHeld(args.patch.items ?? [], stocked.held)
  if (below.length > 0 || !outcome.changed) {
    if (stocked.settledNow) await writeStock(tx, stocked, false)
    return below.length > 0 ? { kind: 'insufficient', errors: below } : outcome
  }
  const updated = listingEvent('listing.updated', outcome.listing)
  await writeThenRecord(tx, stockLead({ ...stocked, state: outcome.listing }, true), providerOwner(outcome.listing.provider_id), args.nowMs, [updated])
  return outcome
}

/** A write transaction (database.transact). The reservations held now are released with it. */
export async function withdrawListing(tx: Tx, args: ChangeArgs): Promise<ChangeOutcome> {
  const locked = await lockStocked(tx, args.listingId, args.providerId)
  const outcome = decideWithdraw(locked?.state, args)
  if (outcome.kind !== 'done' || !outcome.changed || !locked) return outcome
  const next = outcome.listing
  const withdrawn = listingEvent('listing.withdrawn', next)
  // The held columns are null together when no hold is counted.
  if (locked.holdsExpireMs !== null) await releaseOnWithdraw(tx, next, args.nowMs, [withdrawn])
  else await writeThenRecord(tx, withdrawLead(next), providerOwner(next.provider_id), args.nowMs, [withdrawn])
  return outcome
}

/**
 * Records the expiry of up to `limit` due listings. They are found by one read across providers that locks nothing
 * (sharded by provider, each shard answers it from its own index), then each provider's are recorded in a transaction
 * of their own, which touches that provider's rows alone. Returns how many were recorded.
 */
export async function expireDue({ db, transact }: JobDatabase, { nowMs, limit }: { nowMs: number; limit: number }): Promise<number> {
  const due = await db
    .selectFrom('listings')
    .select(['provider_id', 'id'])
    .where('expiry_recorded', '=', 0)
    .where('withdrawn_at_ms', 'is', null)
    .where('expires_at_unix', '<=', Math.floor(nowMs / 1000))
    .orderBy('expires_at_unix')
    .limit(limit)
    .execute()
  let recorded = 0
  for (const [providerId, rows] of byProvider(due, 'provider_id')) {
    const ids = rows.map((row) => row.id)
    recorded += await transact(expireListings, providerId, ids, nowMs)
  }
  return recorded
}

/**
 * Records the expiry of one provider's listings among `ids` that are still due when locked: the read that found
 * them locked nothing, so each is checked again here. SKIP LOCKED on PostgreSQL: two instances sweeping at once
 * take different listings, and a listing whose expiry is recorded no longer matches, so each expiry is recorded
 * exactly once. A withdrawn listing never expires.
 */
export async function expireListings(tx: Tx, providerId: string, ids: readonly string[], nowMs: number): Promise<number> {
  const rows = await tx
    .selectFrom('listings')
    .select(STATE_COLUMN_NAMES)
    .where('provider_id', '=', providerId)
    .where('id', 'in', ids)
    .where('expiry_recorded', '=', 0)
    .where('withdrawn_at_ms', 'is', null)
    .orderBy('expires_at_unix')
    .orderBy('id')
    .$if(onPostgres(tx), (qb) => qb.forUpdate().skipLocked())
    .execute()
  if (rows.length === 0) return 0
  const locked = rows.map((row) => row.id)
  await tx
    .updateTable('listings')
    .set((eb) => ({ version: eb('version', '+', 1), updated_at_ms: eb('expires_at_unix', '*', 1000), expiry_recorded: 1 }))
    .where('provider_id', '=', providerId)
    .where('id', 'in', locked)
    .execute()
  await recordEvents(
    tx,
    providerOwner(providerId),
    nowMs,
    rows.map((row) => listingEvent('listing.expired', expiredState(stateFromRow(row)))),
  )
  return rows.length
}
