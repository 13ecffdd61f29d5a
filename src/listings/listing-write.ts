/** A create's rows, as far as the request decides them (prepareListing in columns.ts). */
export interface PreparedListing {
  providerId: string
  /** listingRecordJson: a ListingRecord, whose provider_id is providerId. */
  record: string
  requestHash: string
  /** The listing's cell (discovery/cells.ts): discovery's indexes are on it, and listings never move. */
  cell: number
}

/** One create as a writer receives it: its prepared rows, and the clock reading and lifetime to date them by. */
export interface ListingWrite extends PreparedListing {
  nowMs: number
  ttlSeconds: number
}

export interface StoredListing {
  listingId: string
  expiresAtUnix: number
}

/**
 * Where creates are stored, one per dialect: the create script (create-script.ts, run by the SQLite writer
 * thread) and postgres-writer.ts. Both store the listing's `listing.created` event with it, and bump the
 * provider's counter row in the create's transaction (see create-script.ts for what that buys).
 */
export interface ListingWriter {
  /** Rejects with the database's error (its `code` as dialect.ts classifies errors). */
  write(write: ListingWrite): Promise<StoredListing>
}
