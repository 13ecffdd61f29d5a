import type { Transact } from '../db/write-transaction.js'
import { aloneOnFailure, TrailingBatches } from '../trailing-batches.js'
import { holdStock, type HoldArgs, type HoldOutcome } from './transactions.js'

/** Holds one transaction takes at most. */
const MAX_BATCH = 64

/**
 * Holds of one listing take turns on its lock; those that arrive while one transaction holds it go together in the
 * next, so a hot listing's lock is taken once for many holds rather than once each (docs/design/0017-stock-accounting.md).
 * Should that transaction fail, each of its holds is made alone (aloneOnFailure).
 */
export class ListingHolds {
  readonly #batches: TrailingBatches<HoldArgs, HoldOutcome>

  constructor(transact: Transact) {
    this.#batches = new TrailingBatches<HoldArgs, HoldOutcome>(
      aloneOnFailure((holds) => transact(holdStock, holds)),
      { maxBatch: MAX_BATCH },
    )
  }

  hold(args: HoldArgs): Promise<HoldOutcome> {
    return this.#batches.submit(args.listingId, args)
  }
}
