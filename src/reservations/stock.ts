import type { Selectable } from 'kysely'
import type { ListingsTable } from '../db/tables.js'
import type { ProblemDetail } from '../errors.js'

/*
 * Stock as plain rules (docs/design/0017-stock-accounting.md). Per item: `held` counts the units of the
 * reservations `counted` in the listing's held_record, `available` = quantity − held. A counted hold that has run out
 * still sits in the sum until a write of the listing takes it out, so a reader trusts the sum only while now is
 * before holds_expire_ms, the earliest counted expiry (heldIsExact), and otherwise reads the holds themselves.
 */

/** One line of a reservation: units of the item at `position`. */
export interface Line {
  position: number
  quantity: number
}

/** What the listing row keeps of its holds. */
export type HeldColumns = Pick<Selectable<ListingsTable>, 'held_record' | 'holds_expire_ms' | 'full_until_ms'>

/** Each item's held units as stored (zeros when none is held). */
export function storedHeld(heldRecord: string | null, itemCount: number): number[] {
  if (heldRecord === null) return new Array<number>(itemCount).fill(0)
  return JSON.parse(heldRecord) as number[]
}

/** Whether the stored sum holds no hold that has run out at nowMs. */
export const heldIsExact = (holdsExpireMs: number | null, nowMs: number) => holdsExpireMs === null || nowMs < holdsExpireMs

/** Units by position (held, or the items' quantities) with each line's units added (sign 1) or taken away (sign −1). */
export function withLines(units: readonly number[], lines: readonly Line[], sign: 1 | -1): number[] {
  const next = [...units]
  for (const { position, quantity } of lines) next[position] = (next[position] ?? 0) + sign * quantity
  return next
}

/** What can be reserved now, per item: nothing of a listing that is not active. */
export function availableOf(quantities: readonly number[], held: readonly number[], active: boolean): number[] {
  return quantities.map((quantity, k) => (active ? Math.max(0, quantity - (held[k] ?? 0)) : 0))
}

/**
 * Lines that do not fit, each named by its index in the request with what its item has available. The units of one
 * position asked on several lines count together, as they would be held together.
 */
export function shortLines(lines: readonly Line[], available: readonly number[]): Array<ProblemDetail & { available: number }> {
  const asked = new Map<number, number>()
  for (const { position, quantity } of lines) asked.set(position, (asked.get(position) ?? 0) + quantity)
  return lines.flatMap(({ position }, k) => {
    const free = available[position] ?? 0
    const wanted = asked.get(position) ?? 0
    return wanted <= free ? [] : [{ pointer: `/items/${k}/quantity`, detail: `only ${free} available`, available: free }]
  })
}

/** The held columns for `held`, whose holds run out first at `holdsExpireMs` (null: no hold is counted). */
export function heldColumns(quantities: readonly number[], held: readonly number[], holdsExpireMs: number | null): HeldColumns {
  if (holdsExpireMs === null || held.every((units) => units === 0)) return { held_record: null, holds_expire_ms: null, full_until_ms: null }
  const full = quantities.every((quantity, k) => quantity === (held[k] ?? 0)) && quantities.some((quantity) => quantity > 0)
  return { held_record: JSON.stringify(held), holds_expire_ms: holdsExpireMs, full_until_ms: full ? holdsExpireMs : null }
}

/** PATCH: an item's new quantity below what is held of it. */
export function belowHeld(
  changes: ReadonlyArray<{ position: number; quantity?: number | undefined }>,
  held: readonly number[],
): Array<ProblemDetail & { held: number }> {
  return changes.flatMap((change, k) => {
    const units = held[change.position] ?? 0
    return change.quantity !== undefined && change.quantity < units
      ? [{ pointer: `/items/${k}/quantity`, detail: `${units} are held by reservations: the quantity cannot go below that`, held: units }]
      : []
  })
}
