import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import pg from 'pg'
import { sql } from 'kysely'
import { seed } from '../bench/seed.js'
import { openDatabase, type Database } from '../src/db/connection.js'
import type { PreparedQuery } from '../src/db/prepared-query.js'
import { seqOfQuery } from '../src/events/feed.js'
import { oneQuery, pageQuery, positionedStateQuery, referenceQuery } from '../src/listings/repository.js'
import { knownReferencesQuery } from '../src/reservations/transactions.js'
import { createTestDatabase, testDialects, type TestDatabase } from './helper.js'

/*
 * A provider that grew after the last ANALYZE counts as nearly empty to PostgreSQL's planner. Planned for its id (an
 * unnamed statement, as every statement is through a pooler in transaction mode), a read by the provider and another
 * key could take any index that begins with provider_id and filter the provider's rows one by one: a create's
 * referenceId check read all of them. Each read of one owner's rows below must read no row it does not return.
 */

const GROWN = 3000

const dialects = await testDialects()

let testDb: TestDatabase
let database: Database
let client: pg.Client
let grown: { providerId: string; listingId: string }

before(async () => {
  if (!dialects.includes('postgres')) return
  testDb = await createTestDatabase('postgres')
  database = openDatabase(testDb.url)
  await seed(database, 2000) // analyzed: the statistics know this provider only
  const { providerId } = await seed(database, GROWN, { analyze: false, providerName: 'Grown since' })
  const listing = await database.kysely
    .selectFrom('listings')
    .select('id')
    .where('provider_id', '=', providerId)
    .orderBy('seq')
    .limit(1)
    .executeTakeFirstOrThrow()
  await sql`insert into events (id, owner_id, seq, type, listing_id, created_at_ms, snapshot)
    select 'evt_' || g, ${providerId}, g, 'listing.created', ${listing.id}, 0, '{}' from generate_series(1, ${GROWN}) g`.execute(database.kysely)
  // A marketplace's index of its reservations, grown alike (only its own table is read).
  await sql`insert into marketplace_reservations (marketplace_id, reference_id, reservation_id, provider_id, listing_id, created_at_ms)
    select 'mkt_grown', 'order-' || g, 'res_' || g, ${providerId}, ${listing.id}, g from generate_series(1, ${GROWN}) g`.execute(database.kysely)
  grown = { providerId, listingId: listing.id }
  client = new pg.Client({ connectionString: testDb.url })
  await client.connect()
})

after(async () => {
  await client?.end()
  await database?.close()
  await testDb?.drop()
})

interface PlanNode {
  'Relation Name'?: string
  'Rows Removed by Filter'?: number
  'Rows Removed by Join Filter'?: number
  'Rows Removed by Index Recheck'?: number
  Plans?: PlanNode[]
}

/** Rows read and thrown away, the owners' own tables aside (a handful of rows: read whole). */
const removed = (node: PlanNode): number =>
  (node['Relation Name'] === 'providers' ? 0 : (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) +
  (node['Rows Removed by Join Filter'] ?? 0) +
  (node.Plans ?? []).reduce((sum, child) => sum + removed(child), 0)

/** Rows the statement read and threw away, run as the service sends it: unnamed, so planned for these values. */
async function rowsThrownAway<P extends Record<string, unknown>>(query: PreparedQuery<P, unknown>, params: P): Promise<number> {
  return thrownAway(query.bound(params))
}

async function thrownAway({ sql: text, parameters }: { sql: string; parameters: readonly unknown[] }): Promise<number> {
  const { rows } = await client.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`explain (analyze, format json) ${text}`, [...parameters])
  const [plan] = rows[0]?.['QUERY PLAN'] ?? []
  assert.ok(plan, 'a plan')
  return removed(plan.Plan)
}

test('reads of one provider read no row they do not return, when it grew after the last ANALYZE', { skip: !dialects.includes('postgres') }, async () => {
  const on = database.kysely
  const { providerId, listingId } = grown
  assert.equal(await rowsThrownAway(referenceQuery(on), { providerId, referenceId: 'seed-1500' }), 0, 'the referenceId check of a create')
  assert.equal(await rowsThrownAway(referenceQuery(on), { providerId, referenceId: 'none' }), 0, 'the referenceId check of a new referenceId')
  assert.equal(await rowsThrownAway(oneQuery(on, 'reference_id'), { key: 'seed-1500', providerId }), 0, 'a listing by referenceId')
  assert.equal(await rowsThrownAway(oneQuery(on, 'id'), { key: listingId, providerId }), 0, 'a listing by id')
  assert.equal(await rowsThrownAway(positionedStateQuery(on, 'reference_id'), { providerId, key: 'seed-1500' }), 0, 'by referenceId, on a standby')
  assert.equal(await rowsThrownAway(pageQuery(on), { skipPlusLimit: 10, skip: 0, providerId }), 0, 'page 1')
  assert.equal(await rowsThrownAway(seqOfQuery(on), { eventId: 'evt_1500', ownerId: providerId }), 0, 'the feed after an event id')
  const holds = [
    { marketplaceId: 'mkt_grown', referenceId: 'order-1500' },
    { marketplaceId: 'mkt_grown', referenceId: 'order-new' },
  ]
  assert.equal(await thrownAway(knownReferencesQuery(on, holds).compile()), 0, 'the referenceId check of holds')
})
