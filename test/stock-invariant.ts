import assert from 'node:assert/strict'
import type { Kysely } from 'kysely'
import type { Tables } from '../src/db/tables.js'
import { heldColumns, storedHeld, withLines, type Line } from '../src/reservations/stock.js'

/** One listing's stock as stored, with the units its confirmed reservations took out of its quantities. */
export interface StoredStock {
  quantities: number[]
  held: number[]
  confirmed: number[]
}

/**
 * What must be true of the stored stock whenever no write is in flight, read from the tables themselves: for every
 * listing, held_record is the sum of the lines of its reservations counted in it; no item is held beyond its
 * quantity; only held reservations are counted, and each one held at nowMs is; the earliest expiry kept is not
 * after the first counted one (else a reader would trust a sum with a run-out hold in it); the three held columns
 * are what the rule makes of them; every reservation is in its marketplace's index and nothing else is there.
 * Returns each listing's stock by id.
 */
export async function checkStockInvariant(db: Kysely<Tables>, nowMs: number): Promise<Map<string, StoredStock>> {
  const listings = await db
    .selectFrom('listings')
    .select(['provider_id', 'id', 'items_record', 'held_record', 'holds_expire_ms', 'full_until_ms', 'withdrawn_at_ms'])
    .execute()
  const reservations = await db
    .selectFrom('reservations')
    .select(['provider_id', 'id', 'marketplace_id', 'reference_id', 'listing_id', 'status', 'items_record', 'expires_at_ms', 'counted'])
    .execute()
  const index = await db
    .selectFrom('marketplace_reservations')
    .select(['marketplace_id', 'reference_id', 'reservation_id', 'provider_id', 'listing_id'])
    .execute()

  const byListing = new Map<string, typeof reservations>()
  for (const reservation of reservations) {
    const key = `${reservation.provider_id}/${reservation.listing_id}`
    byListing.set(key, [...(byListing.get(key) ?? []), reservation])
  }
  const stocks = new Map<string, StoredStock>()
  for (const listing of listings) {
    const where = `listing ${listing.id}`
    const quantities = (JSON.parse(listing.items_record) as Array<{ quantity: number }>).map((item) => item.quantity)
    const own = byListing.get(`${listing.provider_id}/${listing.id}`) ?? []
    const counted = own.filter((reservation) => reservation.counted === 1)
    const linesOf = (reservation: (typeof own)[number]) => JSON.parse(reservation.items_record) as Line[]
    const sum = (rows: typeof own) =>
      rows.reduce(
        (held, reservation) => withLines(held, linesOf(reservation), 1),
        quantities.map(() => 0),
      )

    const held = storedHeld(listing.held_record, quantities.length)
    assert.deepEqual(held, sum(counted), `${where}: held_record is the sum of its counted reservations' lines`)
    held.forEach((units, k) => assert.ok(units >= 0 && units <= (quantities[k] ?? 0), `${where}: item ${k} held ${units} of ${quantities[k]}`))
    for (const reservation of own) {
      if (reservation.counted === 1) assert.equal(reservation.status, 'held', `${where}: ${reservation.id} is counted but ${reservation.status}`)
      else if (reservation.status === 'held' && reservation.expires_at_ms > nowMs) assert.fail(`${where}: ${reservation.id} is held now but not counted`)
    }
    const firstExpiry = counted.length > 0 ? Math.min(...counted.map((reservation) => reservation.expires_at_ms)) : null
    const keptExpiry = listing.holds_expire_ms
    if (firstExpiry === null) assert.equal(listing.held_record, null, `${where}: nothing counted, nothing recorded`)
    else assert.ok(keptExpiry !== null && keptExpiry <= firstExpiry, `${where}: holds_expire_ms ${keptExpiry} after the first counted expiry ${firstExpiry}`)
    if (listing.withdrawn_at_ms !== null) assert.equal(counted.length, 0, `${where}: withdrawn, nothing counted`)
    const columns = {
      held_record: listing.held_record,
      holds_expire_ms: keptExpiry,
      full_until_ms: listing.full_until_ms,
    }
    assert.deepEqual(columns, heldColumns(quantities, held, keptExpiry), `${where}: the held columns as the rule makes them`)
    stocks.set(listing.id, {
      quantities,
      held,
      confirmed: sum(own.filter((reservation) => reservation.status === 'confirmed')),
    })
  }

  const indexed = new Map(index.map((row) => [`${row.marketplace_id}/${row.reservation_id}`, row]))
  assert.equal(index.length, reservations.length, 'one index row per reservation')
  for (const reservation of reservations) {
    const row = indexed.get(`${reservation.marketplace_id}/${reservation.id}`)
    assert.deepEqual(
      row && [row.reference_id, row.provider_id, row.listing_id],
      [reservation.reference_id, reservation.provider_id, reservation.listing_id],
      `${reservation.id} in its marketplace's index`,
    )
  }
  return stocks
}
