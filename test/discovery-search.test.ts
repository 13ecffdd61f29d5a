import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { after, before, describe, test } from 'node:test'
import { seed } from '../bench/seed.js'
import { openDatabase, type Database } from '../src/db/connection.js'
import { DiscoveryRepository } from '../src/discovery/repository.js'
import { search, type Candidates, type SearchQuery } from '../src/discovery/search.js'
import type { ActiveFilter } from '../src/discovery/spatial-index.js'
import { createTestDatabase, testDialects, type TestDatabase } from './helper.js'
import { referenceMeters } from './reference-distance.js'
import { seededRandom as random } from './seeded-random.js'

// The search (src/discovery/search.ts) on each database's real index, over data shaped to find its weak
// spots: expiries that start hours from now, and a crowd of listings expiring in the same second.

const CENTRE = { latitude: 24.7136, longitude: 46.6753 }
const nowMs = Date.now()
const nowUnix = Math.floor(nowMs / 1000)
/** Nothing expires for 5 hours; then 600 listings in the same second; then 1,400 over the next 2 hours. */
const CROWD_AT = nowUnix + 5 * 3600
const COUNT = 2000

interface Row {
  id: string
  latitude: number
  longitude: number
  expires_at_unix: number
}

for (const dialect of await testDialects()) {
  describe(`discovery search over a real index [${dialect}]`, () => {
    let fresh: TestDatabase
    let database: Database
    let rows: Row[]
    before(async () => {
      fresh = await createTestDatabase(dialect)
      database = openDatabase(fresh.url)
      const next = random(7)
      await seed(database, COUNT, {
        items: 1,
        place: (seq) => {
          const r = 3 * Math.sqrt(next())
          const angle = 2 * Math.PI * next()
          return {
            latitude: CENTRE.latitude + (r * Math.cos(angle)) / 111.195,
            longitude: CENTRE.longitude + (r * Math.sin(angle)) / (111.195 * Math.cos((CENTRE.latitude * Math.PI) / 180)),
            expiresAtUnix: seq <= 600 ? CROWD_AT : CROWD_AT + 1 + Math.floor(next() * 7200),
            discountRate: 0.5,
          }
        },
      })
      rows = await database.kysely.selectFrom('listings').select(['id', 'latitude', 'longitude', 'expires_at_unix']).execute()
    })
    after(async () => {
      await database.close()
      await fresh.drop()
    })

    /** Every page of the query in turn, by the search as the route runs it, and the largest candidate read. */
    async function pages(query: Omit<SearchQuery, 'after' | 'nowMs'>, count: number) {
      const repository = new DiscoveryRepository(database)
      const reads: Array<{ filter: ActiveFilter; rows: number }> = []
      const candidates: Candidates = async (box, filter) => {
        const found = await repository.candidates(box, filter)
        reads.push({ filter, rows: found.length })
        return found
      }
      const seen: string[] = []
      let after: SearchQuery['after']
      for (let page = 0; page < count; page++) {
        const hits = (await search({ ...query, after, nowMs }, candidates)).slice(0, query.limit)
        seen.push(...hits.map((hit) => hit.id))
        const last = hits.at(-1)
        if (!last) break
        after = { key: query.sort === 'distance' ? last.distance : last.expiresAtUnix, id: last.id }
      }
      return { seen, reads }
    }

    function bruteForce(radiusMeters: number, sort: 'distance' | 'ending_soon', count: number): string[] {
      const key = (row: Row) => (sort === 'distance' ? referenceMeters(CENTRE.latitude, CENTRE.longitude, row.latitude, row.longitude) : row.expires_at_unix)
      return rows
        .filter((row) => referenceMeters(CENTRE.latitude, CENTRE.longitude, row.latitude, row.longitude) <= radiusMeters)
        .sort((a, b) => key(a) - key(b) || (a.id < b.id ? -1 : 1))
        .slice(0, count)
        .map((row) => row.id)
    }

    test('ending soonest past a 5-hour gap and through a crowd expiring in one second: brute force’s order, and no window read whole', async () => {
      const limit = 20
      const { seen, reads } = await pages({ ...CENTRE, radiusMeters: 5000, sort: 'ending_soon', minDiscountRate: 0.1, limit }, 40)
      assert.deepEqual(seen, bruteForce(5000, 'ending_soon', 40 * limit))
      // A window longer than a second reads at most 8 rows per listing wanted; only the crowd's own second, which
      // cannot be split, is read whole. Doubling past the gap once read a window of every listing at once.
      for (const { filter, rows: read } of reads) {
        const oneSecond = filter.expiresUntil !== null && filter.expiresUntil === filter.expiresFrom
        if (!oneSecond) assert.ok(read <= 8 * (limit + 1), `a window of ${filter.expiresFrom}..${filter.expiresUntil} read ${read} rows`)
      }
      assert.ok(
        reads.some(({ rows: read }) => read >= 600),
        'the crowd’s second was read whole',
      )
    })

    test('nearest first: brute force’s order, page after page', async () => {
      const { seen } = await pages({ ...CENTRE, radiusMeters: 2000, sort: 'distance', minDiscountRate: 0.1, limit: 25 }, 8)
      assert.deepEqual(seen, bruteForce(2000, 'distance', 200))
    })

    test(
      'PostgreSQL sessions run without JIT: it compiled the candidate statement on large tables for far longer than it ran',
      { skip: dialect !== 'postgres' },
      async () => {
        const shown = await sql<{ jit: string }>`show jit`.execute(database.kysely)
        assert.equal(shown.rows[0]?.jit, 'off')
      },
    )

    test('candidate queries asked at once are each answered as when asked alone', async () => {
      const repository = new DiscoveryRepository(database)
      const next = random(13)
      const queries = Array.from({ length: 60 }, (_, k) => ({
        area: { latitude: CENTRE.latitude + (next() - 0.5) / 30, longitude: CENTRE.longitude + (next() - 0.5) / 30, radiusMeters: 100 + 3000 * next() },
        filter: {
          minDiscountRate: k % 5 === 0 ? 0.6 : 0.1, // none passes 0.6: an empty answer among the others
          expiresFrom: nowUnix + 1,
          expiresUntil: k % 2 === 0 ? null : CROWD_AT + Math.floor(3600 * next()),
          ...(k % 3 === 0 ? { limit: 5 } : {}),
        } satisfies ActiveFilter,
      }))
      const sorted = (found: Array<{ id: string }>) => found.map((row) => row.id).sort()
      // Each query alone, without its limit: every listing it may answer with.
      const alone: string[][] = []
      for (const { area, filter } of queries) alone.push(sorted(await repository.candidates(area, { ...filter, limit: undefined })))
      const together = await Promise.all(queries.map(({ area, filter }) => repository.candidates(area, filter)))
      queries.forEach(({ filter }, k) => {
        const got = sorted(together[k] as Array<{ id: string }>)
        const expected = alone[k] as string[]
        if (filter.limit === undefined) assert.deepEqual(got, expected, `query ${k}`)
        // A limit keeps any `limit` of the matches.
        else assert.ok(got.length === Math.min(filter.limit, expected.length) && got.every((id) => expected.includes(id)), `query ${k}`)
      })
      assert.ok(alone.some((ids) => ids.length > 0) && alone.some((ids) => ids.length === 0))
    })
  })
}
