import { recordEvents } from '../events/record.js'
import { pruneOwner } from '../events/retention.js'
import { removeUnusedOfProvider } from '../images/uploads.js'
import { insertListings } from '../listings/create-listing.js'
import { expireListings, patchListing, withdrawListing } from '../listings/changes.js'
import { insertMarketplace } from '../providers/marketplaces.js'
import { endReservation, holdStock, recordHoldExpiries } from '../reservations/transactions.js'
import { insertDemoIfNone, insertProvider } from '../providers/repository.js'
import { recordOwnerAttempts } from '../webhooks/deliveries.js'
import { deleteEndpoint, insertEndpoint } from '../webhooks/repository.js'

/**
 * Every write transaction. The service calls each function itself (`database.transact(patchListing, …)`); this list
 * lets the SQLite writer thread, which is given its name, run it whole there.
 */
export const writeTransactions = {
  insertListings,
  patchListing,
  withdrawListing,
  expireListings,
  holdStock,
  endReservation,
  recordHoldExpiries,
  // Every change calls it last in its own transaction; alone, it records events with no other change.
  recordEvents,
  recordOwnerAttempts,
  pruneOwner,
  removeUnusedOfProvider,
  insertEndpoint,
  deleteEndpoint,
  insertProvider,
  insertDemoIfNone,
  insertMarketplace,
}

export type WriteTransactionName = keyof typeof writeTransactions
