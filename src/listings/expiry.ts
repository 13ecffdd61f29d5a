import type { Kysely } from 'kysely'
import type { Clock } from '../clock.js'
import type { Tables } from '../db/tables.js'
import { expireDue } from './changes.js'

/** Listings whose expiry one expireDue records at most (each provider's in a transaction of its own). */
const BATCH = 500

/**
 * Records expiries (changes.ts expireDue): every instance runs this every SWEEP_INTERVAL_MS, so an expiry's
 * event is committed within that of expiresAtUnix while any instance runs (docs/api.md#events: within 10 s), and
 * at start after downtime. Returns how many were recorded.
 */
export async function recordExpiries(db: Kysely<Tables>, clock: Clock): Promise<number> {
  let total = 0
  for (;;) {
    const expired = await expireDue(db, { nowMs: clock(), limit: BATCH })
    total += expired
    if (expired < BATCH) return total
  }
}

/** An expiry is recorded 2–3 s after it happens at worst, well within the 10 s the API promises. */
export const SWEEP_INTERVAL_MS = 2000
