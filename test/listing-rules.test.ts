import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { applyPatch, decidePatch, decideWithdraw, expiredState, patchBodyProblems, type PatchArgs } from '../src/listings/changes.js'
import { preconditionFails } from '../src/http/conditional.js'
import { itemColumns, listingColumns } from '../src/listings/columns.js'
import { effective, newListingState, statusOf, type ListingState } from '../src/listings/listing-state.js'
import type { CreateListingInput, PatchListingInput } from '../src/listings/schemas.js'
import { listingBody } from './fixtures.js'

// The rules of a listing's statuses and changes as plain functions (listing-state.ts, changes.ts): no database.

const CREATED_MS = Date.UTC(2026, 10, 25, 12)
const EXPIRES_UNIX = CREATED_MS / 1000 + 3600

function listing(overrides: Partial<ListingState> = {}, itemCount = 2): ListingState {
  const input = listingBody({}, itemCount) as CreateListingInput
  const state = newListingState(
    { ...listingColumns('prv_1', input), items: itemColumns(input) },
    { id: 'L1', createdAtMs: CREATED_MS, expiresAtUnix: EXPIRES_UNIX },
  )
  return { ...state, ...overrides }
}

const patchArgs = (patch: PatchListingInput, overrides: Partial<PatchArgs> = {}): PatchArgs => ({
  providerId: 'prv_1',
  listingId: 'L1',
  ifMatch: null,
  nowMs: CREATED_MS + 1000,
  patch,
  ...overrides,
})

describe('statuses', () => {
  test('withdrawn wins over expired, which wins over sold_out, which wins over active', () => {
    const at = (ms: number) => ms
    assert.equal(statusOf({ withdrawn: true, expiresAtUnix: 0, soldOut: true }, at(1000)), 'withdrawn')
    assert.equal(statusOf({ withdrawn: false, expiresAtUnix: 1, soldOut: true }, at(1000)), 'expired')
    assert.equal(statusOf({ withdrawn: false, expiresAtUnix: 2, soldOut: true }, at(1000)), 'sold_out')
    assert.equal(statusOf({ withdrawn: false, expiresAtUnix: 2, soldOut: false }, at(1000)), 'active')
  })

  test('a listing is expired from the very second of expiresAtUnix', () => {
    assert.equal(statusOf({ withdrawn: false, expiresAtUnix: 10, soldOut: false }, 9999), 'active')
    assert.equal(statusOf({ withdrawn: false, expiresAtUnix: 10, soldOut: false }, 10_000), 'expired')
  })

  test('an expiry is a change from the moment it happens: version + 1, changed at the expiry, recorded or not', () => {
    const state = listing()
    const after = EXPIRES_UNIX * 1000
    assert.deepEqual(effective(state, after - 1), { status: 'active', version: 1, updatedAtMs: CREATED_MS })
    assert.deepEqual(effective(state, after), { status: 'expired', version: 2, updatedAtMs: after })
    assert.deepEqual(effective(expiredState(state), after + 5000), { status: 'expired', version: 2, updatedAtMs: after })
  })
})

describe('If-Match', () => {
  test('absent or * never stops a change; otherwise one of its tags must be the current version', () => {
    assert.equal(preconditionFails(null, 3), false)
    assert.equal(preconditionFails({ any: true, tags: [] }, 3), false)
    assert.equal(preconditionFails({ any: false, tags: ['"2"', '"3"'] }, 3), false)
    assert.equal(preconditionFails({ any: false, tags: ['"2"'] }, 3), true)
  })
})

describe('what a PATCH may change, and the order of its checks', () => {
  test('the body alone: something must change, each item entry too, no position twice; all reported at once', () => {
    assert.deepEqual(
      patchBodyProblems({}).map((p) => p.pointer),
      [''],
    )
    assert.deepEqual(
      patchBodyProblems({ items: [{ position: 0 }, { position: 1, quantity: 2 }, { position: 1, price: 3 }] }).map((p) => p.pointer),
      ['/items/0', '/items/2/position'],
    )
    assert.deepEqual(patchBodyProblems({ listingDetails: { discountRate: 0.5 } }), [])
  })

  test('404, then 412, then 409, then positions: each check before the next', () => {
    const expired = listing({ expires_at_unix: CREATED_MS / 1000 })
    const badPosition = { items: [{ position: 7, quantity: 1 }] }
    assert.deepEqual(decidePatch(undefined, patchArgs(badPosition)), { kind: 'not-found' })
    assert.deepEqual(decidePatch(expired, patchArgs(badPosition, { ifMatch: { any: false, tags: ['"1"'] } })), {
      kind: 'precondition-failed',
      version: 2,
    })
    assert.deepEqual(decidePatch(expired, patchArgs(badPosition)), { kind: 'closed', status: 'expired' })
    assert.deepEqual(decidePatch(listing({ withdrawn_at_ms: CREATED_MS }), patchArgs(badPosition)), { kind: 'closed', status: 'withdrawn' })
    const invalid = decidePatch(listing(), patchArgs(badPosition))
    assert.equal(invalid.kind, 'invalid')
    assert.deepEqual(invalid.kind === 'invalid' && invalid.errors.map((e) => e.pointer), ['/items/0/position'])
  })

  test('a sold-out listing still changes; a body of current values changes nothing and keeps the version', () => {
    const state = listing()
    const [first] = state.items
    assert.ok(first)
    const same = decidePatch(state, patchArgs({ items: [{ position: 0, quantity: first.quantity, price: first.price_thousandths / 1000 }] }))
    assert.deepEqual(same, { kind: 'done', listing: state, changed: false })
    const soldOut = listing({ items: state.items.map((item) => ({ ...item, quantity: 0 })) })
    const restocked = decidePatch(soldOut, patchArgs({ items: [{ position: 1, quantity: 4 }] }))
    assert.equal(restocked.kind === 'done' && restocked.changed && restocked.listing.items[1]?.quantity, 4)
  })

  test('a change is the next version, at its time but never before the last change', () => {
    const state = listing({ updated_at_ms: CREATED_MS + 10_000, version: 4 })
    const changed = decidePatch(state, patchArgs({ listingDetails: { discountRate: 0.9 } }, { nowMs: CREATED_MS + 5000 }))
    assert.ok(changed.kind === 'done' && changed.changed)
    assert.equal(changed.listing.version, 5)
    assert.equal(changed.listing.updated_at_ms, CREATED_MS + 10_000)
    assert.equal(changed.listing.discount_rate, 0.9)
  })

  test('prices compare in thousandths: 7.1 and 7.100 are the same price', () => {
    const state = listing()
    assert.equal(
      applyPatch({ ...state, items: state.items.map((item) => ({ ...item, price_thousandths: 7100 })) }, { items: [{ position: 0, price: 7.1 }] }),
      null,
    )
  })
})

describe('withdrawal', () => {
  test('final: withdrawing again changes nothing; an expired listing cannot be withdrawn; If-Match first', () => {
    const args = { providerId: 'prv_1', listingId: 'L1', ifMatch: null, nowMs: CREATED_MS + 1000 }
    const withdrawn = decideWithdraw(listing(), args)
    assert.ok(withdrawn.kind === 'done' && withdrawn.changed)
    assert.equal(withdrawn.listing.withdrawn_at_ms, args.nowMs)
    assert.equal(withdrawn.listing.version, 2)
    assert.deepEqual(decideWithdraw(withdrawn.listing, args), { kind: 'done', listing: withdrawn.listing, changed: false })
    const expired = listing({ expires_at_unix: CREATED_MS / 1000 })
    assert.deepEqual(decideWithdraw(expired, args), { kind: 'closed', status: 'expired' })
    assert.deepEqual(decideWithdraw(expired, { ...args, ifMatch: { any: false, tags: ['"1"'] } }), { kind: 'precondition-failed', version: 2 })
    assert.deepEqual(decideWithdraw(undefined, args), { kind: 'not-found' })
  })
})
