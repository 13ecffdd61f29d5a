import { jobDatabase } from '../src/db/connection.js'
import assert from 'node:assert/strict'
import { afterEach, test } from 'node:test'
import { pino } from 'pino'
import { anyAddress, publicAddressesOnly, type AddressPolicy } from '../src/images/address-policy.js'
import { DISABLE_AFTER_MS, DeliveryWorker } from '../src/webhooks/worker.js'
import { WebhookSender } from '../src/webhooks/sender.js'
import { listingBody } from './fixtures.js'
import { describeEachDialect, type TestService } from './helper.js'
import { marketplaceOwner, providerOwner, recordFor, reservationData, reservationEvent } from './owner-events.js'
import { refusingUrl, startReceiver, verifies, type Receiver } from './webhook-receiver.js'

// docs/api.md#webhooks: delivery of events to webhook endpoints, a provider's or a marketplace's, Standard Webhooks
// signatures, retries, disabling. The
// worker runs in this process on the service's database and clock (the test clock): retries come due when the
// test moves the clock, not after real waits. Receivers are real HTTP servers on 127.0.0.1.

const TIMEOUT_MS = 400
const SCHEDULE_MS = [1000, 2000]
const silent = pino({ level: 'silent' })

/** Told of every claim the test's workers finish, with how many deliveries it found: what stillAt waits on. */
const claimListeners = new Set<(found: number) => void>()

const workers = new Set<DeliveryWorker>()
const receivers = new Set<Receiver>()
afterEach(async () => {
  await Promise.all([...workers].map((worker) => worker.stop(0)))
  await Promise.all([...receivers].map((receiver) => receiver.close()))
  workers.clear()
  receivers.clear()
})

function startWorker(
  service: TestService,
  policy: AddressPolicy = anyAddress,
  retryDelaysMs = SCHEDULE_MS,
  options: { inFlight?: () => number; pollMs?: number } = {},
): DeliveryWorker {
  const worker = new DeliveryWorker({
    db: jobDatabase(service.database),
    onClaim: (found) => {
      for (const listener of claimListeners) listener(found)
    },
    clock: service.clock,
    sender: new WebhookSender({ policy, timeoutMs: TIMEOUT_MS }),
    timeoutMs: TIMEOUT_MS,
    retryDelaysMs,
    logger: silent,
    pollMs: 20,
    // No jitter: a retry is due exactly one delay after its failure.
    random: () => 0,
    ...options,
  })
  workers.add(worker)
  worker.start()
  return worker
}

async function receiver(answer?: Receiver['answer']): Promise<Receiver> {
  const started = await startReceiver(answer)
  receivers.add(started)
  return started
}

async function endpoint(service: TestService, token: string, url: string, events?: string[]): Promise<{ id: string; secret: string }> {
  const created = await service.request('POST', '/api/v1/webhooks', { token, json: { url, ...(events ? { events } : {}) } })
  assert.equal(created.status, 201, created.text)
  return created.body
}

async function createListing(service: TestService, token: string): Promise<string> {
  const created = await service.create(token, listingBody({}, 2))
  assert.equal(created.status, 201, created.text)
  return created.body.listingId
}

const byId = <T extends { id: string }>(events: T[]): T[] => [...events].sort((a, b) => (a.id < b.id ? -1 : 1))
const feed = async (service: TestService, token: string) => (await service.request('GET', '/api/v1/events?limit=100', { token })).body.data
const log = async (service: TestService, token: string, id: string) =>
  (await service.request('GET', `/api/v1/webhooks/${id}/deliveries?limit=100`, { token })).body.data
const endpointOf = async (service: TestService, token: string, id: string) => (await service.request('GET', `/api/v1/webhooks/${id}`, { token })).body

/** Waits until the endpoint's log satisfies `predicate`; returns it. */
async function logWhen(service: TestService, token: string, id: string, predicate: (entries: any[]) => boolean): Promise<any[]> {
  let entries: any[] = []
  for (const deadline = Date.now() + 5000; Date.now() < deadline;) {
    entries = await log(service, token, id)
    if (predicate(entries)) return entries
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.fail(`the log never got there: ${JSON.stringify(entries)}`)
}

/** A new provider with one endpoint and 30 deliveries owed to it (one per create), no worker running yet. */
async function thirtyOwed(service: TestService): Promise<Receiver> {
  const { token } = await service.newProvider()
  const hooks = await receiver()
  await endpoint(service, token, hooks.url)
  for (let i = 0; i < 30; i++) await createListing(service, token)
  return hooks
}

/**
 * The worker looks for due deliveries three times running and finds none (claims it finished, however long they
 * take), and the receiver still has exactly `count` deliveries.
 */
async function stillAt(receiver: Receiver, count: number): Promise<void> {
  await new Promise<void>((resolve) => {
    let emptyClaims = 0
    const listener = (found: number) => {
      emptyClaims = found === 0 ? emptyClaims + 1 : 0
      if (emptyClaims < 3) return
      claimListeners.delete(listener)
      resolve()
    }
    claimListeners.add(listener)
  })
  assert.equal(receiver.deliveries.length, count)
}

await describeEachDialect(
  'webhook delivery',
  (service) => {
    test('while the API is saturated (32 requests in flight), deliveries give way (12 a poll, one claim per poll); at full speed once it eases', async () => {
      const hooks = await thirtyOwed(service)
      let saturated = true
      startWorker(service, anyAddress, SCHEDULE_MS, { inFlight: () => (saturated ? 32 : 31), pollMs: 400 })
      await hooks.waitFor((deliveries) => deliveries.length === 12)
      // Each attempt's end would claim again at full speed; saturated, only the next poll does, 400 ms on. What is
      // tested is that timing, so here real time passes: well within the poll, and nothing more arrives.
      await new Promise((resolve) => setTimeout(resolve, 250))
      assert.equal(hooks.deliveries.length, 12)
      await hooks.waitFor((deliveries) => deliveries.length === 24)
      saturated = false
      await hooks.waitFor((deliveries) => deliveries.length === 30)
    })

    test('busy but not saturated (31 requests in flight), deliveries go at full speed: one poll delivers all 30', async () => {
      const hooks = await thirtyOwed(service)
      // One poll, then none for a minute: only claiming on at full speed delivers all 30.
      startWorker(service, anyAddress, SCHEDULE_MS, { inFlight: () => 31, pollMs: 60_000 })
      await hooks.waitFor((deliveries) => deliveries.length === 30)
    })

    test('saturated (32 requests in flight), deliveries give way however late they are', async () => {
      const hooks = await thirtyOwed(service)
      service.clock.now += 60_000
      let saturated = true
      const claimedWhileSaturated: number[] = []
      const listener = (found: number) => {
        if (saturated) claimedWhileSaturated.push(found)
      }
      claimListeners.add(listener)
      try {
        startWorker(service, anyAddress, SCHEDULE_MS, { inFlight: () => (saturated ? 32 : 31), pollMs: 100 })
        await hooks.waitFor((deliveries) => deliveries.length >= 24)
        saturated = false
        await hooks.waitFor((deliveries) => deliveries.length === 30)
      } finally {
        claimListeners.delete(listener)
      }
      // Behind by a minute, and still 12 a claim: keeping up would claim the other 18 at once.
      assert.ok(claimedWhileSaturated.length >= 2)
      assert.ok(
        claimedWhileSaturated.every((found) => found <= 12),
        String(claimedWhileSaturated),
      )
    })

    test('every event goes, signed, to each enabled endpoint subscribed to its type; the body is the feed’s event', async () => {
      const { token } = await service.newProvider()
      const all = await receiver()
      const withdrawals = await receiver()
      const allEndpoint = await endpoint(service, token, all.url)
      const withdrawalEndpoint = await endpoint(service, token, withdrawals.url, ['listing.withdrawn'])
      startWorker(service)
      const id = await createListing(service, token)
      assert.equal((await service.request('PATCH', `/api/v1/listing/${id}`, { token, json: { items: [{ position: 0, quantity: 0 }] } })).status, 200)
      assert.equal((await service.request('POST', `/api/v1/listing/${id}/withdraw`, { token })).status, 200)
      await all.waitFor((deliveries) => deliveries.length === 3)
      await withdrawals.waitFor((deliveries) => deliveries.length === 1)

      const events = await feed(service, token)
      assert.deepEqual(
        events.map((event: { type: string }) => event.type),
        ['listing.created', 'listing.updated', 'listing.withdrawn'],
      )
      const byId = new Map(all.deliveries.map((delivery) => [delivery.id, delivery]))
      for (const event of events) {
        const delivery = byId.get(event.id)
        assert.ok(delivery, `${event.type} was not delivered`)
        assert.deepEqual(delivery.event, event)
        assert.equal(delivery.headers['content-type'], 'application/json')
        assert.ok(verifies(allEndpoint.secret, delivery), 'the signature does not verify with standardwebhooks')
        assert.ok(!verifies(withdrawalEndpoint.secret, delivery))
        assert.match(delivery.signature, /^v1,[A-Za-z0-9+/]+=*$/)
        assert.equal(Number(delivery.timestamp), Math.floor(service.clock() / 1000))
      }
      assert.equal(withdrawals.deliveries[0]?.event.type, 'listing.withdrawn')
      assert.ok(verifies(withdrawalEndpoint.secret, withdrawals.deliveries[0]))
      // The log: one succeeded attempt each, nothing pending (a delivery is recorded just after it arrived).
      const entries = await logWhen(service, token, allEndpoint.id, (entries) => entries.every((entry) => entry.outcome === 'succeeded'))
      assert.deepEqual(entries.map((entry: any) => [entry.outcome, entry.attempt, entry.responseStatus, entry.error]).sort(), [
        ['succeeded', 1, 200, null],
        ['succeeded', 1, 200, null],
        ['succeeded', 1, 200, null],
      ])
      await stillAt(all, 3)
    })

    test('events committed before an endpoint existed, and other providers’ events, are not sent to it', async () => {
      const { token } = await service.newProvider()
      const other = await service.newProvider()
      await createListing(service, token)
      const hooks = await receiver()
      await endpoint(service, token, hooks.url)
      startWorker(service)
      await createListing(service, other.token)
      const id = await createListing(service, token)
      await hooks.waitFor((deliveries) => deliveries.length === 1)
      await stillAt(hooks, 1)
      assert.equal(hooks.deliveries[0]?.event.data.id, id)
    })

    test('a failed attempt is retried after each delay of the schedule, then the delivery has failed for good', async () => {
      const { token } = await service.newProvider()
      const hooks = await receiver(() => 500)
      const { id: endpointId } = await endpoint(service, token, hooks.url)
      startWorker(service)
      const started = service.clock()
      await createListing(service, token)
      await hooks.waitFor((deliveries) => deliveries.length === 1)
      await stillAt(hooks, 1)
      let entries = await logWhen(service, token, endpointId, (entries) => entries.length === 2)
      assert.deepEqual(
        entries.map((entry: any) => [entry.outcome, entry.attempt, entry.at]),
        [
          ['pending', 2, new Date(started + SCHEDULE_MS[0]!).toISOString()],
          ['failed', 1, new Date(started).toISOString()],
        ],
      )
      assert.equal(entries[1].responseStatus, 500)
      assert.equal(entries[1].error, 'answered 500')

      service.clock.now += SCHEDULE_MS[0]! - 1
      await stillAt(hooks, 1)
      service.clock.now += 1
      await hooks.waitFor((deliveries) => deliveries.length === 2)
      // Recorded (and its retry scheduled) before the clock moves on.
      await logWhen(service, token, endpointId, (entries) => entries[0]?.outcome === 'pending' && entries[0]?.attempt === 3)
      service.clock.now += SCHEDULE_MS[1]!
      await hooks.waitFor((deliveries) => deliveries.length === 3)
      service.clock.now += 3_600_000
      await stillAt(hooks, 3)
      // One event, three attempts of it, each signed again.
      assert.equal(new Set(hooks.deliveries.map((delivery) => delivery.id)).size, 1)
      entries = await log(service, token, endpointId)
      assert.deepEqual(
        entries.map((entry: any) => [entry.outcome, entry.attempt]),
        [
          ['failed', 3],
          ['failed', 2],
          ['failed', 1],
        ],
      )
      assert.equal((await endpointOf(service, token, endpointId)).status, 'enabled')
    })

    test('a marketplace’s events go, signed, to its own endpoints only; a provider’s go to the provider’s', async () => {
      const provider = await service.newProvider()
      const marketplace = await service.newMarketplace('Deals App')
      const other = await service.newMarketplace('Other App')
      const [marketplaceHooks, providerHooks, otherHooks, releases] = await Promise.all([receiver(), receiver(), receiver(), receiver()])
      const marketplaceEndpoint = await endpoint(service, marketplace.token, marketplaceHooks.url)
      const releasesEndpoint = await endpoint(service, marketplace.token, releases.url, ['reservation.released'])
      const providerEndpoint = await endpoint(service, provider.token, providerHooks.url)
      await endpoint(service, other.token, otherHooks.url)
      startWorker(service)
      const held = reservationData({ id: marketplace.id, name: 'Deals App' }, provider.id, { listingId: await createListing(service, provider.token) })
      const released = { ...held, status: 'released', version: 2, endedBy: 'marketplace' }
      for (const event of [reservationEvent('reservation.held', held), reservationEvent('reservation.released', released)]) {
        await recordFor(service.database, providerOwner(provider.id), service.clock(), [event])
        await recordFor(service.database, marketplaceOwner(marketplace.id), service.clock(), [event])
      }
      await marketplaceHooks.waitFor((deliveries) => deliveries.length === 2)
      await providerHooks.waitFor((deliveries) => deliveries.length === 3)
      await releases.waitFor((deliveries) => deliveries.length === 1)

      // The bodies are the marketplace's feed, each signed with its endpoint's secret. Deliveries to one endpoint run
      // side by side, so they may arrive in either order.
      const events = await feed(service, marketplace.token)
      assert.deepEqual(byId(marketplaceHooks.deliveries.map((delivery) => delivery.event)), byId(events))
      assert.deepEqual(
        events.map((event: any) => [event.type, event.data]),
        [
          ['reservation.held', held],
          ['reservation.released', released],
        ],
      )
      for (const delivery of marketplaceHooks.deliveries) {
        assert.ok(verifies(marketplaceEndpoint.secret, delivery), 'the signature does not verify with standardwebhooks')
        assert.ok(!verifies(providerEndpoint.secret, delivery))
      }
      assert.deepEqual(releases.deliveries[0]?.event, events[1])
      assert.ok(verifies(releasesEndpoint.secret, releases.deliveries[0] as never))
      // The provider's endpoint has the provider's stream: its listing's event and its own copies of the reservation's.
      const providerEvents = await feed(service, provider.token)
      assert.deepEqual(byId(providerHooks.deliveries.map((delivery) => delivery.event)), byId(providerEvents))
      const ids = new Set(events.map((event: { id: string }) => event.id))
      assert.ok(providerHooks.deliveries.every((delivery) => !ids.has(delivery.id)))
      const entries = await logWhen(
        service,
        marketplace.token,
        marketplaceEndpoint.id,
        (log) => log.length === 2 && log.every((entry) => entry.outcome === 'succeeded'),
      )
      assert.deepEqual(entries.map((entry: any) => entry.eventId).sort(), [...ids].sort())
      await stillAt(otherHooks, 0)
    })

    test('a failed attempt to a marketplace’s endpoint is retried by the schedule; 410 disables it', async () => {
      const marketplace = await service.newMarketplace()
      const hooks = await receiver(() => 503)
      const { id: endpointId } = await endpoint(service, marketplace.token, hooks.url)
      startWorker(service)
      const started = service.clock()
      const data = reservationData({ id: marketplace.id, name: 'marketplace' }, 'prv_x')
      await recordFor(service.database, marketplaceOwner(marketplace.id), started, [reservationEvent('reservation.held', data)])
      await hooks.waitFor((deliveries) => deliveries.length === 1)
      const entries = await logWhen(service, marketplace.token, endpointId, (log) => log.length === 2)
      assert.deepEqual(
        entries.map((entry: any) => [entry.outcome, entry.attempt, entry.at, entry.responseStatus]),
        [
          ['pending', 2, new Date(started + SCHEDULE_MS[0]!).toISOString(), null],
          ['failed', 1, new Date(started).toISOString(), 503],
        ],
      )
      hooks.answer = () => 410
      service.clock.now += SCHEDULE_MS[0]!
      await hooks.waitFor((deliveries) => deliveries.length === 2)
      assert.equal(hooks.deliveries[1]?.id, hooks.deliveries[0]?.id)
      let state: any
      for (const deadline = Date.now() + 5000; Date.now() < deadline && state?.status !== 'disabled';) {
        state = await endpointOf(service, marketplace.token, endpointId)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      assert.deepEqual([state.status, state.disabledReason], ['disabled', 'the endpoint answered 410 Gone'])
    })

    test('the address policy applies to every attempt to a marketplace’s endpoint too', async () => {
      const marketplace = await service.newMarketplace()
      const hooks = await receiver()
      const { id: endpointId } = await endpoint(service, marketplace.token, hooks.url.replace('127.0.0.1', 'localhost'))
      startWorker(service, publicAddressesOnly)
      const data = reservationData({ id: marketplace.id, name: 'marketplace' }, 'prv_x')
      await recordFor(service.database, marketplaceOwner(marketplace.id), service.clock(), [reservationEvent('reservation.held', data)])
      const entries = await logWhen(service, marketplace.token, endpointId, (log) => log.some((entry) => entry.outcome === 'failed'))
      assert.equal(entries.find((entry) => entry.outcome === 'failed')?.error, 'localhost does not resolve to a public address')
      assert.equal(hooks.deliveries.length, 0)
    })

    test('a timeout, a refused connection and a redirect are failed attempts too, and retried', async () => {
      const { token } = await service.newProvider()
      const hanging = await receiver(() => 'hang')
      const redirecting = await receiver(() => 302)
      const urls = { timeout: hanging.url, refused: await refusingUrl(), redirect: redirecting.url }
      const endpoints = Object.fromEntries(
        await Promise.all(Object.entries(urls).map(async ([name, url]) => [name, (await endpoint(service, token, url)).id] as const)),
      )
      startWorker(service)
      await createListing(service, token)
      const expected: Record<string, RegExp> = {
        timeout: new RegExp(`^no answer within ${TIMEOUT_MS} ms$`),
        refused: /^the server refused the connection$/,
        redirect: /^answered 302: redirects are not followed$/,
      }
      for (const [name, id] of Object.entries(endpoints)) {
        const deadline = Date.now() + 5000
        let entries: any[] = []
        while (Date.now() < deadline) {
          entries = await log(service, token, id)
          if (entries.some((entry) => entry.outcome === 'failed')) break
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        const failed = entries.find((entry) => entry.outcome === 'failed')
        assert.ok(failed, `${name}: no failed attempt in ${JSON.stringify(entries)}`)
        assert.match(failed.error, expected[name] as RegExp, name)
        assert.ok(
          entries.some((entry) => entry.outcome === 'pending' && entry.attempt === 2),
          name,
        )
      }
      // Only the redirecting receiver's first URL was asked; its Location was never followed.
      assert.deepEqual(redirecting.deliveries.length, 1)
      service.clock.now += SCHEDULE_MS[0]!
      await redirecting.waitFor((deliveries) => deliveries.length === 2)
      await hanging.waitFor((deliveries) => deliveries.length === 2)
    })

    test('410 Gone disables the endpoint at once; enabled again, it gets what it was owed, not what came meanwhile', async () => {
      const { token } = await service.newProvider()
      const hooks = await receiver(() => 410)
      const { id: endpointId } = await endpoint(service, token, hooks.url)
      startWorker(service)
      await createListing(service, token)
      await hooks.waitFor((deliveries) => deliveries.length === 1)
      let state: any
      for (const deadline = Date.now() + 5000; Date.now() < deadline;) {
        state = await endpointOf(service, token, endpointId)
        if (state.status === 'disabled') break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      assert.deepEqual([state.status, state.disabledReason], ['disabled', 'the endpoint answered 410 Gone'])
      const owed = hooks.deliveries[0]?.id

      await createListing(service, token) // committed while disabled: never sent
      service.clock.now += SCHEDULE_MS[0]!
      await stillAt(hooks, 1)

      hooks.answer = () => 204
      const enabled = await service.request('POST', `/api/v1/webhooks/${endpointId}/enable`, { token })
      assert.deepEqual([enabled.body.status, enabled.body.disabledReason], ['enabled', null])
      await hooks.waitFor((deliveries) => deliveries.length === 2)
      await stillAt(hooks, 2)
      assert.equal(hooks.deliveries[1]?.id, owed)
    })

    test('an endpoint whose attempts have all failed for 5 days is disabled; a success starts the count again', async () => {
      const { token } = await service.newProvider()
      const hooks = await receiver(() => 503)
      const { id: endpointId } = await endpoint(service, token, hooks.url)
      // No retries: each listing's event is attempted once, at once.
      startWorker(service, anyAddress, [])
      const attemptAt = async (count: number) => {
        await createListing(service, token)
        await hooks.waitFor((deliveries) => deliveries.length === count)
        await logWhen(service, token, endpointId, (entries) => entries.filter((entry) => entry.outcome !== 'pending').length === count)
      }
      await attemptAt(1)
      service.clock.now += DISABLE_AFTER_MS / 2
      hooks.answer = () => 200
      await attemptAt(2) // a success: the run of failures ends
      hooks.answer = () => 503
      service.clock.now += 1000
      await attemptAt(3)
      service.clock.now += DISABLE_AFTER_MS - 2000
      await attemptAt(4)
      assert.equal((await endpointOf(service, token, endpointId)).status, 'enabled')
      service.clock.now += 2000
      await attemptAt(5)
      const state = await endpointOf(service, token, endpointId)
      assert.equal(state.status, 'disabled')
      assert.match(state.disabledReason, /^every attempt since \d{4}-.+ has failed$/)
    })

    test('a host name that resolves to a forbidden address is never contacted (the policy applies at each attempt)', async () => {
      const { token } = await service.newProvider()
      const hooks = await receiver()
      const { id: endpointId } = await endpoint(service, token, hooks.url.replace('127.0.0.1', 'localhost'))
      startWorker(service, publicAddressesOnly)
      await createListing(service, token)
      let entries: any[] = []
      for (const deadline = Date.now() + 5000; Date.now() < deadline && entries.length < 2;) {
        entries = await log(service, token, endpointId)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      assert.equal(entries[1]?.outcome, 'failed', JSON.stringify(entries))
      assert.equal(entries[1]?.error, 'localhost does not resolve to a public address')
      assert.equal(hooks.deliveries.length, 0)
    })

    test('after a rotation both secrets sign for 24 hours, then only the new one', async () => {
      const { token } = await service.newProvider()
      const hooks = await receiver()
      const { id: endpointId, secret: before } = await endpoint(service, token, hooks.url)
      const rotated = await service.request('POST', `/api/v1/webhooks/${endpointId}/rotate-secret`, { token })
      const after = rotated.body.secret as string
      startWorker(service)
      await createListing(service, token)
      await hooks.waitFor((deliveries) => deliveries.length === 1)
      const during = hooks.deliveries[0] as never
      assert.ok(verifies(before, during) && verifies(after, during))
      assert.equal((hooks.deliveries[0]?.signature ?? '').split(' ').length, 2)

      service.clock.now += 24 * 3600 * 1000
      await createListing(service, token)
      await hooks.waitFor((deliveries) => deliveries.length === 2)
      const later = hooks.deliveries[1] as never
      assert.ok(verifies(after, later) && !verifies(before, later))
    })

    test('a deleted endpoint gets no new attempt, even of deliveries it was owed', async () => {
      const { token } = await service.newProvider()
      const hooks = await receiver(() => 500)
      const { id: endpointId } = await endpoint(service, token, hooks.url)
      startWorker(service)
      await createListing(service, token)
      await hooks.waitFor((deliveries) => deliveries.length === 1)
      await logWhen(service, token, endpointId, (entries) => entries.some((entry) => entry.outcome === 'failed'))
      assert.equal((await service.request('DELETE', `/api/v1/webhooks/${endpointId}`, { token })).status, 204)
      service.clock.now += SCHEDULE_MS[0]!
      await createListing(service, token)
      await stillAt(hooks, 1)
    })

    test('two workers on one database: every event delivered, none attempted by both at once', async () => {
      const { token } = await service.newProvider()
      const hooks = await receiver()
      hooks.delayMs = 30
      await endpoint(service, token, hooks.url)
      startWorker(service)
      startWorker(service)
      await Promise.all(Array.from({ length: 30 }, () => createListing(service, token)))
      await hooks.waitFor((deliveries) => deliveries.length >= 30, 20_000)
      await stillAt(hooks, 30)
      assert.equal(new Set(hooks.deliveries.map((delivery) => delivery.id)).size, 30)
      assert.equal(hooks.maxConcurrentSameId, 1)
    })

    test('stop() cuts off an attempt that hangs without recording it; its lease runs out and it is made again', async () => {
      const { token } = await service.newProvider()
      const hooks = await receiver(() => 'hang')
      const { id: endpointId } = await endpoint(service, token, hooks.url)
      const first = startWorker(service)
      await createListing(service, token)
      await hooks.waitFor((deliveries) => deliveries.length === 1)
      const stopping = Date.now()
      await first.stop(50)
      workers.delete(first)
      assert.ok(Date.now() - stopping < 1000)
      assert.deepEqual(
        (await log(service, token, endpointId)).map((entry: any) => [entry.outcome, entry.attempt]),
        [['pending', 1]],
      )

      hooks.answer = () => 200
      startWorker(service)
      await stillAt(hooks, 1) // still leased
      service.clock.now += TIMEOUT_MS + 15_000
      await hooks.waitFor((deliveries) => deliveries.length === 2)
      assert.equal(hooks.deliveries[1]?.id, hooks.deliveries[0]?.id)
    })
  },
  { env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } },
)
