import type { Clock } from '../clock.js'
import type { JobDatabase } from '../db/connection.js'
import { expireDueHolds } from '../reservations/transactions.js'
import { expireDue } from './changes.js'

/** Expiries one expireDue call records at most. */
const BATCH = 500

/** Every instance runs this at start and every SWEEP_INTERVAL_MS: listings', then holds'. Returns how many expiries were recorded. */
export async function recordExpiries(db: JobDatabase, clock: Clock): Promise<number> {
  let total = 0
  for (const expire of [expireDue, expireDueHolds]) {
    for (;;) {
      const expired = await expire(db, { nowMs: clock(), limit: BATCH })
      total += expired
      if (expired < BATCH) break
    }
  }
  return total
}

/** An expiry is recorded 2–3 s after it happens at worst, well within the 10 s the API promises. */
export const SWEEP_INTERVAL_MS = 2000
