import assert from 'node:assert/strict'
import { test } from 'node:test'
import { disableReason, nextAttemptAt } from '../src/webhooks/deliveries.js'
import { EventTypes } from '../src/events/types.js'
import { ALL_EVENTS, maskOf, typesOf } from '../src/webhooks/event-mask.js'

// The rules of webhook retries and of disabling an endpoint (webhooks/deliveries.ts), as plain functions.

const SCHEDULE = [5_000, 300_000, 1_800_000]

test('a failed attempt is retried after its delay in the schedule, plus up to a tenth; none after the last', () => {
  assert.equal(nextAttemptAt(1, false, 1000, SCHEDULE, 0), 6000)
  assert.equal(nextAttemptAt(2, false, 1000, SCHEDULE, 0.5), 1000 + 315_000)
  assert.equal(nextAttemptAt(3, false, 0, SCHEDULE, 0.999), Math.round(1_800_000 * 1.0999))
  assert.equal(nextAttemptAt(4, false, 0, SCHEDULE, 0), null)
})

test('a successful attempt is the end of its delivery', () => {
  assert.equal(nextAttemptAt(1, true, 1000, SCHEDULE, 0), null)
})

test('410 Gone disables at once; otherwise only after failing for the whole period', () => {
  const day = 24 * 3600 * 1000
  assert.equal(disableReason(true, 1000, 1000, 5 * day), 'the endpoint answered 410 Gone')
  assert.equal(disableReason(false, 0, 5 * day - 1, 5 * day), null)
  assert.match(String(disableReason(false, 0, 5 * day, 5 * day)), /^every attempt since 1970-01-01T00:00:00.000Z has failed$/)
})

test('an endpoint made without `events` has every bit: it receives every type, also one appended to the list later', () => {
  assert.deepEqual(typesOf(ALL_EVENTS), [...EventTypes])
  // The place a 10th and a 31st type would take.
  for (const place of [EventTypes.length, 30]) assert.notEqual(ALL_EVENTS & (1 << place), 0, String(place))
  // One made with every type named receives those alone.
  assert.equal(maskOf(EventTypes) & (1 << EventTypes.length), 0)
  assert.deepEqual(typesOf(maskOf(['reservation.held', 'listing.created'])), ['listing.created', 'reservation.held'])
})
