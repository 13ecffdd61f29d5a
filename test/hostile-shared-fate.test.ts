import assert from 'node:assert/strict'
import { hash } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { openDatabase } from '../src/db/connection.js'
import { migrate } from '../src/db/migrate.js'
import { DiscoveryRepository } from '../src/discovery/repository.js'
import { prepareListing } from '../src/listings/columns.js'
import { ListingCreates } from '../src/listings/create-listing.js'
import type { CreateListingInput } from '../src/listings/schemas.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { listingBody } from './fixtures.js'
import { createTestDatabase, readResponse, testDialects, type Response, type TestDatabase } from './helper.js'
import { assertProblem } from './http-support.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'

/*
 * Forged discovery cursors, against the service as a real process on each database. A cursor is the
 * service's to issue: one it did not issue is 400 naming `cursor`, whatever its content, and one marketplace's
 * forged cursors fail none of another marketplace's requests sent at the same moment.
 */

after(killAll)

const AROUND = { latitude: 24.7136, longitude: 46.6753 }
const LISTINGS = 12

const discover = (params: Record<string, string | number>) => `/api/v1/discover?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]))}`

/** A cursor as the service wrote them before they were signed: base64url JSON whose fingerprint anyone computes. */
function unsignedCursor(
  query: { latitude: number; longitude: number; radiusKm: number; sort: string; minDiscountRate: number },
  k: number,
  id: string,
): string {
  const q = hash('sha256', JSON.stringify([query.latitude, query.longitude, query.radiusKm, query.sort, query.minDiscountRate]), 'base64url').slice(0, 16)
  return Buffer.from(JSON.stringify({ q, k, id })).toString('base64url')
}

/** The same cursor with its payload's key replaced and its signature kept. */
function rekeyed(cursor: string, k: number): string {
  const [payload, mac] = cursor.split('.') as [string, string]
  const value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
  return `${Buffer.from(JSON.stringify({ ...value, k })).toString('base64url')}.${mac}`
}

for (const dialect of await testDialects()) {
  describe(`forged discovery cursors [${dialect}]`, { timeout: 120_000 }, () => {
    let database: TestDatabase
    let server: ServerProcess
    let attacker: string
    let victim: string
    const call = async (path: string, token: string): Promise<Response> =>
      readResponse(await fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } }))

    before(async () => {
      database = await createTestDatabase(dialect)
      server = await startServer({ DATABASE_URL: database.url, RATE_LIMIT_PER_MINUTE: '0' })
      const cli = async (...args: string[]) => {
        const made = await runCli(args, { DATABASE_URL: database.url })
        assert.equal(made.code, 0, made.stderr)
        return JSON.parse(made.stdout) as { token: string }
      }
      const provider = await cli('provider', 'create', '--name', 'Corner Bakery')
      attacker = (await cli('marketplace', 'create', '--name', 'Forger')).token
      victim = (await cli('marketplace', 'create', '--name', 'Honest')).token
      for (let i = 0; i < LISTINGS; i++) {
        const body = listingBody({ location: { latitude: AROUND.latitude + i * 0.001, longitude: AROUND.longitude } })
        const response = await fetch(`${server.baseUrl}/api/v1/listing/create`, {
          method: 'POST',
          headers: { authorization: `Bearer ${provider.token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        assert.equal(response.status, 201, await response.text())
      }
    })
    after(async () => {
      await server?.stop('SIGKILL')
      await database?.drop()
    })

    for (const sort of ['distance', 'ending_soon'] as const) {
      test(`a cursor the service did not issue is 400 naming cursor, whatever it says (${sort})`, async () => {
        const query = { ...AROUND, radiusKm: 5, sort, minDiscountRate: 0.1 }
        const first = await call(discover({ ...query, limit: 2 }), victim)
        assert.equal(first.status, 200)
        const issued = first.body.nextCursor as string
        const lastId = first.body.data[1].listing.listingId as string
        const forgeries = [
          unsignedCursor(query, 1.5, lastId),
          unsignedCursor(query, 1e300, lastId),
          unsignedCursor(query, 0, lastId),
          rekeyed(issued, 1.5),
          rekeyed(issued, 2 ** 63),
          rekeyed(issued, 1e300),
          `${issued.split('.')[0]}.${'A'.repeat(22)}`,
          issued.slice(0, -1) + (issued.endsWith('A') ? 'B' : 'A'),
        ]
        for (const cursor of forgeries) {
          const response = await call(discover({ ...query, cursor }), attacker)
          const problem = assertProblem(response, 400, 'invalid-request')
          assert.deepEqual(
            problem.errors.map((e: { parameter: string }) => e.parameter),
            ['cursor'],
            cursor,
          )
        }
        const next = await call(discover({ ...query, limit: 2, cursor: issued }), victim)
        assert.equal(next.status, 200, 'the cursor the service issued still continues the query')
      })
    }

    test("one marketplace's forged cursors fail none of another marketplace's requests sent with them", async () => {
      const query = { ...AROUND, radiusKm: 5, sort: 'ending_soon', minDiscountRate: 0.1 }
      const first = await call(discover({ ...query, limit: 2 }), victim)
      const issued = first.body.nextCursor as string
      const forged = [rekeyed(issued, 1.5), unsignedCursor(query, 1.5, first.body.data[1].listing.listingId as string)]
      const answers = await Promise.all(
        Array.from({ length: 120 }, (_, i) =>
          i % 3 === 0
            ? call(discover({ ...query, cursor: forged[i % 2] as string }), attacker).then((r) => ({ who: 'attacker', r }))
            : call(discover(i % 2 === 0 ? { ...query, limit: 2, cursor: issued } : query), victim).then((r) => ({ who: 'victim', r })),
        ),
      )
      const victims = answers.filter((a) => a.who === 'victim').map((a) => a.r.status)
      const attacks = answers.filter((a) => a.who === 'attacker').map((a) => a.r.status)
      assert.deepEqual([...new Set(victims)], [200], `victim statuses: ${victims.join(',')}`)
      assert.deepEqual([...new Set(attacks)], [400], `attacker statuses: ${attacks.join(',')}`)
    })
  })

  test(`a candidate query that fails fails no other query sent with it [${dialect}]`, { timeout: 60_000 }, async () => {
    const testDatabase = await createTestDatabase(dialect)
    const db = openDatabase(testDatabase.url)
    try {
      await migrate(db)
      const discovery = new DiscoveryRepository(db)
      const area = { ...AROUND, radiusMeters: 1000 }
      // A fractional expiry is no value a page could end on; PostgreSQL refuses it for a bigint column.
      const broken = { minDiscountRate: 0.1, expiresFrom: 1.5, expiresUntil: 2.5 }
      const fine = { minDiscountRate: 0.1, expiresFrom: 1, expiresUntil: 2 }
      const outcomes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => discovery.candidates(area, i % 4 === 0 ? broken : fine)))
      outcomes.forEach((outcome, i) => {
        if (i % 4 !== 0) assert.equal(outcome.status, 'fulfilled', `query ${i}: ${outcome.status === 'rejected' ? String(outcome.reason) : ''}`)
      })
    } finally {
      await db.close()
      await testDatabase.drop()
    }
  })
}

for (const dialect of await testDialects()) {
  test(`a create that fails in the database fails no other create stored with it [${dialect}]`, { timeout: 60_000 }, async () => {
    const testDatabase = await createTestDatabase(dialect)
    const db = openDatabase(testDatabase.url)
    try {
      await migrate(db)
      const provider = await new ProviderRepository(db).create({ name: 'Shared fate' }, Date.now())
      const creates = new ListingCreates(db.transact)
      const write = (i: number) => {
        const prepared = prepareListing(provider.id, listingBody() as CreateListingInput)
        // A value validation would refuse, so only the database can: a NUL in a text column (PostgreSQL refuses
        // it; SQLite stores it, so there every create succeeds, which the test allows).
        const columns = i % 5 === 0 ? { ...prepared.columns, brand_name_en: 'Morning\u0000Bakery' } : prepared.columns
        return creates.store({ ...prepared, columns, nowMs: Date.now(), ttlSeconds: 3600 })
      }
      const outcomes = await Promise.allSettled(Array.from({ length: 40 }, (_, i) => write(i)))
      outcomes.forEach((outcome, i) => {
        if (i % 5 !== 0) assert.equal(outcome.status, 'fulfilled', `create ${i}: ${outcome.status === 'rejected' ? String(outcome.reason) : ''}`)
      })
      if (dialect === 'postgres')
        assert.ok(
          outcomes.some((outcome) => outcome.status === 'rejected'),
          'the poisoned creates failed',
        )
    } finally {
      await db.close()
      await testDatabase.drop()
    }
  })
}
