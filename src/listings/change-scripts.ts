import { execute, query, queryOne, type Script, type ScriptSql } from '../db/script.js'
import type { ProblemDetail } from '../errors.js'
import { recordEvents, type NewEvent } from '../events/record.js'
import { fromThousandths, toThousandths, type ItemColumns } from './columns.js'
import { effective, isSoldOut, stateFromRow, STATE_COLUMNS, type ListingState, type StateRow } from './listing-state.js'
import { itemsJson } from './page-json.js'
import type { PatchListingInput } from './schemas.js'

/*
 * The changes of docs/api.md#statuses-and-expiry as write scripts (db/script.ts): one code base, run by the SQLite writer thread
 * and on PostgreSQL alike. Each reads the listing locked (FOR UPDATE on PostgreSQL: concurrent changes of one
 * listing, from any instance, serialise there), decides, writes the listing and its event, and answers with
 * what happened. Nothing is written unless something changes.
 */

/** `If-Match`, parsed (http/conditional.ts): `*`, or the opaque parts of its strong entity tags. */
export interface IfMatch {
  any: boolean
  tags: string[]
}

export type ChangeOutcome =
  | { kind: 'not-found' }
  | { kind: 'precondition-failed'; version: number }
  | { kind: 'closed'; status: 'expired' | 'withdrawn' }
  | { kind: 'invalid'; errors: ProblemDetail[] }
  | { kind: 'done'; listing: ListingState; changed: boolean }

interface ChangeArgs {
  providerId: string
  listingId: string
  ifMatch: IfMatch | null
  nowMs: number
}

export interface PatchArgs extends ChangeArgs {
  patch: PatchListingInput
}

const NOT_FOUND: ChangeOutcome = { kind: 'not-found' }

/** The listing, locked until the transaction ends, as it is at `nowMs`; or why the change stops here. */
function* lockedListing(d: ScriptSql, args: ChangeArgs): Script<ChangeOutcome | { state: ListingState; status: string }> {
  const row = yield* queryOne<StateRow>(`select ${STATE_COLUMNS} from listings where id = ? and provider_id = ?${d.forUpdate}`, [
    args.listingId,
    args.providerId,
  ])
  if (!row) return NOT_FOUND
  const state = stateFromRow(row)
  const { status, version } = effective(state, args.nowMs)
  // RFC 9110 §13.2.2: a precondition is evaluated before anything else about the request.
  if (args.ifMatch && !args.ifMatch.any && !args.ifMatch.tags.includes(`"${version}"`)) {
    return { kind: 'precondition-failed', version }
  }
  return { state, status }
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

/** Positions that name no item of this listing; the route has already refused positions given twice. */
function positionErrors(patch: PatchListingInput, itemCount: number): ProblemDetail[] {
  return (patch.items ?? []).flatMap((change, k) =>
    change.position < itemCount
      ? []
      : [{ pointer: `/items/${k}/position`, detail: `no item has this position: the listing has ${itemCount} (positions 0 to ${itemCount - 1})` }],
  )
}

/** A change's version and time: the next version, at `nowMs` but never before the last change. */
function nextVersion(state: ListingState, nowMs: number): Pick<ListingState, 'version' | 'updated_at_ms'> {
  return { version: state.version + 1, updated_at_ms: Math.max(nowMs, state.updated_at_ms) }
}

const itemsListJson = (items: readonly ItemColumns[]) =>
  itemsJson(
    items.map((item) => ({
      nameAr: item.name_ar,
      nameEn: item.name_en,
      price: fromThousandths(item.price_thousandths),
      quantity: item.quantity,
      category: item.category,
    })),
  )

export function* patchListing(d: ScriptSql, args: PatchArgs): Script<ChangeOutcome> {
  const found = yield* lockedListing(d, args)
  if ('kind' in found) return found
  const { state, status } = found
  if (status === 'expired' || status === 'withdrawn') return { kind: 'closed', status }
  const errors = positionErrors(args.patch, state.items.length)
  if (errors.length > 0) return { kind: 'invalid', errors }
  const patched = applyPatch(state, args.patch)
  if (!patched) return { kind: 'done', listing: state, changed: false }
  const next = { ...patched, ...nextVersion(state, args.nowMs) }
  yield* execute(
    'update listings set version = ?, updated_at_ms = ?, discount_rate = ?, sold_out = ?, items_json = ?, items_record = ? where id = ?',
    [next.version, next.updated_at_ms, next.discount_rate, isSoldOut(next.items) ? 1 : 0, itemsListJson(next.items), JSON.stringify(next.items), next.id],
  )
  // listing_items stays the complete record: the rows of the items that changed.
  for (const item of next.items) {
    const before = state.items[item.position] as ItemColumns
    if (item.quantity === before.quantity && item.price_thousandths === before.price_thousandths) continue
    yield* execute('update listing_items set quantity = ?, price_thousandths = ? where listing_id = ? and position = ?', [
      item.quantity,
      item.price_thousandths,
      next.id,
      item.position,
    ])
  }
  yield* recordEvents(d, args.providerId, args.nowMs, [{ type: 'listing.updated', listing: next }])
  return { kind: 'done', listing: next, changed: true }
}

/** Withdrawal is final; withdrawing again changes nothing. An expired listing stays expired. */
export function* withdrawListing(d: ScriptSql, args: ChangeArgs): Script<ChangeOutcome> {
  const found = yield* lockedListing(d, args)
  if ('kind' in found) return found
  const { state, status } = found
  if (status === 'withdrawn') return { kind: 'done', listing: state, changed: false }
  if (status === 'expired') return { kind: 'closed', status }
  const next: ListingState = { ...state, ...nextVersion(state, args.nowMs), withdrawn_at_ms: args.nowMs }
  yield* execute('update listings set version = ?, updated_at_ms = ?, withdrawn_at_ms = ? where id = ?', [
    next.version,
    next.updated_at_ms,
    next.withdrawn_at_ms,
    next.id,
  ])
  yield* recordEvents(d, args.providerId, args.nowMs, [{ type: 'listing.withdrawn', listing: next }])
  return { kind: 'done', listing: next, changed: true }
}

/**
 * Records the expiry of listings whose time has come (listings/expiry.ts runs it every few seconds on every
 * instance): version + 1, updated at the moment of expiry, `expiry_recorded`, and a `listing.expired` event
 * each. SKIP LOCKED on PostgreSQL: two instances sweeping at once take different listings, and a listing whose
 * expiry is recorded is not selected again, so each expiry is recorded exactly once. A withdrawn listing never
 * expires.
 */
export function* expireDue(d: ScriptSql, { nowMs, limit }: { nowMs: number; limit: number }): Script<{ expired: number }> {
  const rows = yield* query<StateRow>(
    `select ${STATE_COLUMNS} from listings
     where expiry_recorded = 0 and withdrawn_at_ms is null and expires_at_unix <= ?
     order by expires_at_unix limit ?${d.forUpdateSkipLocked}`,
    [Math.floor(nowMs / 1000), limit],
  )
  if (rows.length === 0) return { expired: 0 }
  yield* execute(
    `update listings set version = version + 1, updated_at_ms = expires_at_unix * 1000, expiry_recorded = 1
     where ${d.inJsonList('id')}`,
    [JSON.stringify(rows.map((row) => row.id))],
  )
  const byProvider = new Map<string, NewEvent[]>()
  for (const row of rows) {
    const state = stateFromRow(row)
    const listing: ListingState = { ...state, version: state.version + 1, updated_at_ms: state.expires_at_unix * 1000, expiry_recorded: 1 }
    const events = byProvider.get(state.provider_id) ?? []
    events.push({ type: 'listing.expired', listing })
    byProvider.set(state.provider_id, events)
  }
  // Providers in one order on every instance, so two sweepers never wait on each other's provider rows.
  for (const providerId of [...byProvider.keys()].sort()) {
    yield* recordEvents(d, providerId, nowMs, byProvider.get(providerId) as NewEvent[])
  }
  return { expired: rows.length }
}
