import assert from 'node:assert/strict'
import { test } from 'node:test'
import { listingBody } from './fixtures.js'
import { describeEachDialect, type Response, type TestService } from './helper.js'

// recordCount is a counter and pages are ranges of a per-provider sequence (no COUNT, no OFFSET). This pins
// that the shortcut is exact: under concurrent creates, recordCount and the union of all pages are exactly
// the set of listings created, with nothing repeated or skipped, on both databases.

/** Every page of a provider's listings at `limit`, read until the first empty one. */
async function allPages(service: TestService, token: string, limit: number): Promise<Response[]> {
  const pages: Response[] = []
  for (let page = 1; ; page++) {
    const response = await service.list(token, `?page=${page}&limit=${limit}`)
    assert.equal(response.status, 200, response.text)
    if (response.body.content.length === 0) return pages
    pages.push(response)
  }
}

await describeEachDialect('recordCount and pages under concurrent creates', (service) => {
  test('60 parallel creates for two providers, pages read meanwhile: counts and pages are exactly what was created', async () => {
    const a = await service.newProvider()
    const b = await service.newProvider()
    const owners = Array.from({ length: 60 }, (_, i) => (i % 3 === 2 ? b : a))
    const creating = Promise.all(owners.map((owner, i) => service.create(owner.token, listingBody({ referenceId: `c-${i}` }))))
    const reading = Promise.all(Array.from({ length: 30 }, () => service.list(a.token, '?limit=50')))
    const [created, readMeanwhile] = await Promise.all([creating, reading])

    for (const response of created) assert.equal(response.status, 201, response.text)
    // A page read while creates commit is one snapshot: it holds exactly min(limit, recordCount) listings.
    for (const page of readMeanwhile) {
      assert.equal(page.status, 200, page.text)
      assert.equal(page.body.content.length, Math.min(50, page.body.recordCount), page.text)
    }

    for (const owner of [a, b]) {
      const expected = created.filter((_, i) => owners[i] === owner).map((response) => response.body.listingId as string)
      for (const limit of [1, 7, 50]) {
        const pages = await allPages(service, owner.token, limit)
        const ids: string[] = pages.flatMap((page) => page.body.content.map((listing: { id: string }) => listing.id))
        for (const page of pages) assert.equal(page.body.recordCount, expected.length)
        assert.equal(new Set(ids).size, ids.length, `limit ${limit}: a listing appears twice`)
        assert.deepEqual([...ids].sort(), [...expected].sort(), `limit ${limit}: pages differ from the created set`)
        // Newest first: within one provider, ids sort as listings were created.
        assert.deepEqual(ids, [...ids].sort().reverse(), `limit ${limit}: not newest first`)
      }
      const seqs = await service.database.kysely.selectFrom('listings').select('seq').where('provider_id', '=', owner.id).orderBy('seq').execute()
      assert.deepEqual(
        seqs.map((row) => row.seq),
        expected.map((_, i) => i + 1),
        'sequence numbers are dense: 1..recordCount',
      )
    }
  })
})

await describeEachDialect(
  'read-your-writes under concurrent identical reads',
  (service) => {
    // A page read sent after a create was acknowledged counts that create, on both databases: every read counts
    // at least the creates answered before it was sent. (Pages were once answered from a cache and from shared
    // queries; this is what either, done wrong, broke.)
    test('30 creates one after another while 8 clients read the same page back to back: no read misses an acknowledged create', async () => {
      const provider = await service.newProvider()
      let acknowledged = 0
      let creating = true
      const misses: string[] = []
      let reads = 0
      const reader = async () => {
        while (creating) {
          // Out of step with each other: readers in lockstep would all wait on one query and never send during it.
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 4))
          const before = acknowledged
          const page = await service.list(provider.token, '?limit=5')
          assert.equal(page.status, 200, page.text)
          reads++
          if (page.body.recordCount < before) misses.push(`sent after ${before} acknowledged creates, counted ${page.body.recordCount}`)
        }
      }
      const readers = Array.from({ length: 8 }, reader)
      for (let i = 0; i < 30; i++) {
        const created = await service.create(provider.token, listingBody({ referenceId: `ryw-${i}` }))
        assert.equal(created.status, 201, created.text)
        acknowledged++
      }
      creating = false
      await Promise.all(readers)
      assert.deepEqual(misses, [], `${misses.length} of ${reads} reads missed a create`)
    })
  },
  { env: { RATE_LIMIT_PER_MINUTE: '0' } },
)

await describeEachDialect('a listing and its events agree after concurrent changes', (service) => {
  // A listing's row (version, sold_out, items_record) and its events must agree: every change is one event, and the
  // last event holds the listing as it is. This pins them against each other after creates and changes made at once.
  test('items_record, sold_out, versions and events', async () => {
    const provider = await service.newProvider()
    const ids: string[] = []
    for (let i = 0; i < 5; i++) ids.push((await service.create(provider.token, listingBody({}, 3))).body.listingId)
    const changes = ids.flatMap((id, k) =>
      Array.from({ length: 6 }, (_, round) =>
        service.request('PATCH', `/api/v1/listing/${id}`, {
          token: provider.token,
          json: { items: [{ position: round % 3, quantity: (round + k) % 3, price: 5 + round / 4 }] },
        }),
      ),
    )
    changes.push(service.request('POST', `/api/v1/listing/${ids[4]}/withdraw`, { token: provider.token }))
    changes.push(...Array.from({ length: 5 }, () => service.create(provider.token, listingBody({}, 2))))
    for (const answer of await Promise.all(changes)) assert.ok([200, 201, 409].includes(answer.status), answer.text)

    const db = service.database.kysely
    const listings = await db.selectFrom('listings').selectAll().where('provider_id', '=', provider.id).execute()
    const events = await db.selectFrom('events').selectAll().where('owner_id', '=', provider.id).orderBy('seq').execute()
    const counters = await db.selectFrom('providers').select(['event_count', 'listing_count']).where('id', '=', provider.id).executeTakeFirstOrThrow()
    assert.equal(counters.event_count, events.length)
    assert.deepEqual(
      events.map((event) => event.seq),
      events.map((_, i) => i + 1),
      'event seqs are dense',
    )
    for (const listing of listings) {
      const record = JSON.parse(listing.items_record) as Array<Record<string, unknown>>
      assert.deepEqual(
        record.map((row) => row.position),
        record.map((_, i) => i),
        `${listing.id}: items dense by position`,
      )
      assert.equal(listing.sold_out, record.every((row) => row.quantity === 0) ? 1 : 0, `${listing.id}: sold_out`)
      const own = events.filter((event) => event.listing_id === listing.id)
      assert.deepEqual(
        own.map((event) => JSON.parse(event.snapshot).version),
        own.map((_, i) => i + 1),
        `${listing.id}: event versions`,
      )
      assert.equal(listing.version, own.length, `${listing.id}: one event per version`)
      assert.deepEqual(JSON.parse(own.at(-1)?.snapshot as string).items, record, `${listing.id}: the last event holds the listing as it is`)
    }
  })
})
