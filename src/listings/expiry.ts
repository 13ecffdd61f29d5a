import type { Clock } from '../clock.js'
import type { Writes } from '../writes/writes.js'

/** Listings whose expiry one transaction records at most: bounds how long it holds the writer and its locks. */
const BATCH = 500

/**
 * Records expiries (change-scripts.ts expireDue): every instance runs this every SWEEP_INTERVAL_MS, so an
 * expiry's event is committed within that of expiresAtUnix while any instance runs (docs/api.md#events: within 10 s),
 * and at start after downtime. Returns how many were recorded.
 */
export async function recordExpiries(writes: Writes, clock: Clock): Promise<number> {
  let total = 0
  for (;;) {
    const { expired } = await writes.run('expireDue', { nowMs: clock(), limit: BATCH })
    total += expired
    if (expired < BATCH) return total
  }
}

/** 2 s: an expiry is recorded 2–3 s after it happens at worst, well within the contract's 10 s. */
export const SWEEP_INTERVAL_MS = 2000
