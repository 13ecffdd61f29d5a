import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { effectiveReservation } from '../src/reservations/reservation.js'
import type { ReservationStatus } from '../src/reservations/schemas.js'
import { availableOf, belowHeld, heldColumns, heldIsExact, shortLines, storedHeld, withLines, type HeldColumns, type Line } from '../src/reservations/stock.js'
import { decideEnd, type Action } from '../src/reservations/transactions.js'

// The rules of stock and of a reservation's statuses as plain functions (stock.ts, reservation.ts, decideEnd): no
// database. The property at the end runs them the way the transactions do against a model of what the API promises.

describe('stock as stored', () => {
  test('storedHeld: nothing stored is zeros for every item; otherwise the stored array', () => {
    assert.deepEqual(storedHeld(null, 3), [0, 0, 0])
    assert.deepEqual(storedHeld(null, 0), [])
    assert.deepEqual(storedHeld('[2,0,5]', 3), [2, 0, 5])
  })

  test('heldIsExact: true without counted holds and before the first runs out; false from that millisecond on', () => {
    assert.equal(heldIsExact(null, 0), true)
    assert.equal(heldIsExact(1000, 999), true)
    assert.equal(heldIsExact(1000, 1000), false)
    assert.equal(heldIsExact(1000, 1001), false)
  })

  test('withLines adds or takes away each line, lines of one position together, and leaves its input alone', () => {
    const held = [1, 2]
    const lines = [
      { position: 1, quantity: 3 },
      { position: 0, quantity: 1 },
      { position: 1, quantity: 1 },
    ]
    assert.deepEqual(withLines(held, lines, 1), [2, 6])
    assert.deepEqual(withLines([2, 6], lines, -1), [1, 2])
    assert.deepEqual(held, [1, 2])
    assert.deepEqual(withLines([0, 0], [], 1), [0, 0])
  })

  test('availableOf: quantity − held per item, never below zero; nothing at all of a listing that is not active', () => {
    assert.deepEqual(availableOf([5, 3, 0], [2, 3, 0], true), [3, 0, 0])
    assert.deepEqual(availableOf([5, 3], [], true), [5, 3], 'an item missing from held has none held')
    assert.deepEqual(availableOf([1], [4], true), [0])
    assert.deepEqual(availableOf([5, 3], [0, 0], false), [0, 0])
  })
})

describe('which lines do not fit', () => {
  test('every line fits: none named', () => {
    const lines = [
      { position: 0, quantity: 2 },
      { position: 1, quantity: 1 },
    ]
    assert.deepEqual(shortLines(lines, [2, 1]), [])
  })

  test('each short line is named by its index in the request, with what its item has available', () => {
    const lines = [
      { position: 1, quantity: 2 },
      { position: 0, quantity: 1 },
      { position: 2, quantity: 4 },
    ]
    assert.deepEqual(
      shortLines(lines, [5, 1, 3]).map(({ pointer, available }) => ({ pointer, available })),
      [
        { pointer: '/items/0/quantity', available: 1 },
        { pointer: '/items/2/quantity', available: 3 },
      ],
    )
    const [first] = shortLines(lines, [5, 1, 3])
    assert.equal(first?.detail, 'only 1 available')
  })

  test('lines of one position count together: 2 + 2 of an item with 3 do not fit, and both lines are named', () => {
    // The API refuses a position given twice before this (400); the rule is still right if one ever reaches it.
    const lines = [
      { position: 0, quantity: 2 },
      { position: 1, quantity: 1 },
      { position: 0, quantity: 2 },
    ]
    assert.deepEqual(
      shortLines(lines, [3, 1]).map(({ pointer, available }) => ({ pointer, available })),
      [
        { pointer: '/items/0/quantity', available: 3 },
        { pointer: '/items/2/quantity', available: 3 },
      ],
    )
    assert.deepEqual(shortLines(lines, [4, 1]), [], '2 + 2 of an item with 4 fit')
  })

  test('a position beyond the items has nothing available', () => {
    assert.deepEqual(
      shortLines([{ position: 3, quantity: 1 }], [5]).map(({ available }) => available),
      [0],
    )
  })
})

describe('the held columns', () => {
  test('nothing counted, or nothing held: all three empty', () => {
    const empty = { held_record: null, holds_expire_ms: null, full_until_ms: null }
    assert.deepEqual(heldColumns([5, 3], [0, 0], 1000), empty)
    assert.deepEqual(heldColumns([5, 3], [0, 0], null), empty)
  })

  test('some held: the record and the first expiry; not full while any item has units left', () => {
    assert.deepEqual(heldColumns([5, 3], [2, 3], 1000), { held_record: '[2,3]', holds_expire_ms: 1000, full_until_ms: null })
    assert.deepEqual(heldColumns([5, 3], [5, 0], 1000), { held_record: '[5,0]', holds_expire_ms: 1000, full_until_ms: null })
  })

  test('every item fully held: full until the first hold runs out', () => {
    assert.deepEqual(heldColumns([5, 3], [5, 3], 1000), { held_record: '[5,3]', holds_expire_ms: 1000, full_until_ms: 1000 })
    // An item with no units left has nothing to hold: the listing is full when the others are.
    assert.deepEqual(heldColumns([4, 0], [4, 0], 7), { held_record: '[4,0]', holds_expire_ms: 7, full_until_ms: 7 })
  })
})

describe('PATCH against what is held', () => {
  test('a new quantity below its item’s held is named by its index in the PATCH, with the held units; to held or more passes', () => {
    const held = [2, 4, 0]
    const refused = belowHeld([{ position: 2, quantity: 0 }, { position: 1, quantity: 3 }, { position: 0, quantity: 2 }, { position: 0 }], held)
    assert.deepEqual(
      refused.map(({ pointer, held: units }) => ({ pointer, held: units })),
      [{ pointer: '/items/1/quantity', held: 4 }],
    )
    assert.deepEqual(belowHeld([{ position: 1, quantity: 9 }], held), [])
    assert.deepEqual(belowHeld([{ position: 5, quantity: 0 }], held), [], 'an item without holds may go to zero')
  })
})

describe('ending a reservation', () => {
  const STATUSES: ReservationStatus[] = ['held', 'confirmed', 'released', 'cancelled', 'expired']
  type Expected = ReturnType<typeof decideEnd>
  const to = (status: 'confirmed' | 'released' | 'cancelled', endedBy: 'marketplace' | 'provider' | null): Expected => ({ to: status, endedBy })
  const nothing: Expected = { to: null }
  const refuse = (why: 'expired' | 'closed'): Expected => ({ refuse: why })

  // The marketplace that made it may confirm, release and cancel; the listing's provider only cancel (its confirm
  // and release are 403 before this rule is asked).
  const table: Record<'marketplace' | 'provider', Partial<Record<Action, Record<ReservationStatus, Expected>>>> = {
    marketplace: {
      confirm: { held: to('confirmed', null), confirmed: nothing, released: refuse('closed'), cancelled: refuse('closed'), expired: refuse('expired') },
      release: { held: to('released', 'marketplace'), confirmed: refuse('closed'), released: nothing, cancelled: refuse('closed'), expired: nothing },
      cancel: { held: to('released', 'marketplace'), confirmed: to('cancelled', 'marketplace'), released: nothing, cancelled: nothing, expired: nothing },
    },
    provider: {
      cancel: { held: to('released', 'provider'), confirmed: to('cancelled', 'provider'), released: nothing, cancelled: nothing, expired: nothing },
    },
  }

  for (const [actor, actions] of Object.entries(table) as Array<[keyof typeof table, (typeof table)[keyof typeof table]]>) {
    for (const [action, byStatus] of Object.entries(actions) as Array<[Action, Record<ReservationStatus, Expected>]>) {
      test(`${action} by the ${actor}, from each status`, () => {
        for (const status of STATUSES) assert.deepEqual(decideEnd(action, status, actor), byStatus[status], `${action} of a ${status} one`)
      })
    }
  }

  test('every transition leaves held: from nothing else does a status change but confirmed → cancelled', () => {
    for (const status of STATUSES)
      for (const action of ['confirm', 'release', 'cancel'] as const)
        for (const actor of ['marketplace', 'provider'] as const) {
          const decision = decideEnd(action, status, actor)
          if ('to' in decision && decision.to !== null)
            assert.ok(status === 'held' || (status === 'confirmed' && decision.to === 'cancelled'), `${action} of ${status} by ${actor}`)
        }
  })
})

describe('a reservation as read at an instant', () => {
  const row = { status: 'held' as ReservationStatus, version: 1, expires_at_ms: 10_000, updated_at_ms: 4000 }

  test('held until one millisecond before expiresAt; expired at it (version + 1, changed at the expiry)', () => {
    assert.deepEqual(effectiveReservation(row, 9999), { status: 'held', version: 1, updatedAtMs: 4000 })
    assert.deepEqual(effectiveReservation(row, 10_000), { status: 'expired', version: 2, updatedAtMs: 10_000 })
    assert.deepEqual(effectiveReservation(row, 99_999), { status: 'expired', version: 2, updatedAtMs: 10_000 })
  })

  test('an ended one stays as stored past its expiry, a recorded expiry included', () => {
    for (const status of ['confirmed', 'released', 'cancelled'] as const)
      assert.deepEqual(effectiveReservation({ ...row, status, version: 2 }, 20_000), { status, version: 2, updatedAtMs: 4000 })
    assert.deepEqual(effectiveReservation({ status: 'expired', version: 2, expires_at_ms: 10_000, updated_at_ms: 10_000 }, 20_000), {
      status: 'expired',
      version: 2,
      updatedAtMs: 10_000,
    })
  })
})

// ---- The property: the stock rules, composed as the transactions compose them, against a model ----------------

type Actor = 'marketplace' | 'provider'

/** What the API promises, by definition: held = the lines of reservations held now; nothing stored but statuses. */
class Model {
  readonly reservations: Array<{ lines: Line[]; expiresAtMs: number; status: ReservationStatus }> = []
  withdrawn = false
  constructor(public quantities: number[]) {}

  statusAt(k: number, nowMs: number): ReservationStatus {
    const r = this.reservations[k] as Model['reservations'][number]
    return r.status === 'held' && nowMs >= r.expiresAtMs ? 'expired' : r.status
  }
  active = () => !this.withdrawn && this.quantities.some((quantity) => quantity > 0)
  held(nowMs: number): number[] {
    const held = this.quantities.map(() => 0)
    this.reservations.forEach((r, k) => {
      if (this.statusAt(k, nowMs) === 'held') for (const line of r.lines) held[line.position] = (held[line.position] ?? 0) + line.quantity
    })
    return held
  }
  available(nowMs: number): number[] {
    const held = this.held(nowMs)
    return this.quantities.map((quantity, k) => (this.active() ? quantity - (held[k] ?? 0) : 0))
  }

  hold(lines: Line[], expiresAtMs: number, nowMs: number): 'made' | 'short' | 'closed' {
    if (!this.active()) return 'closed'
    const free = this.available(nowMs)
    for (const k of free.keys()) {
      const asked = lines.filter((line) => line.position === k).reduce((sum, line) => sum + line.quantity, 0)
      if (asked > (free[k] ?? 0)) return 'short'
    }
    this.reservations.push({ lines, expiresAtMs, status: 'held' })
    return 'made'
  }

  /** The statuses as the API describes them, written out again rather than asked of decideEnd. */
  end(k: number, action: Action, nowMs: number): 'changed' | 'same' | 'refused' {
    const r = this.reservations[k] as Model['reservations'][number]
    const status = this.statusAt(k, nowMs)
    const move = (next: ReservationStatus, sign: number) => {
      const listingOpen = !this.withdrawn
      if (sign !== 0 && listingOpen) for (const line of r.lines) this.quantities[line.position] = (this.quantities[line.position] ?? 0) + sign * line.quantity
      r.status = next
      return 'changed' as const
    }
    if (action === 'confirm') return status === 'held' ? move('confirmed', -1) : status === 'confirmed' ? 'same' : 'refused'
    if (action === 'release') return status === 'held' ? move('released', 0) : status === 'released' || status === 'expired' ? 'same' : 'refused'
    if (status === 'held') return move('released', 0)
    if (status === 'confirmed') return move('cancelled', 1)
    return 'same'
  }

  patch(position: number, quantity: number, nowMs: number): 'done' | 'below' | 'closed' {
    if (this.withdrawn) return 'closed'
    if (quantity < (this.held(nowMs)[position] ?? 0)) return 'below'
    this.quantities[position] = quantity
    return 'done'
  }

  withdraw(nowMs: number) {
    this.reservations.forEach((r, k) => {
      if (this.statusAt(k, nowMs) === 'held') r.status = 'released'
    })
    this.withdrawn = true
  }
}

/**
 * The listing as the service keeps it (quantities and the held columns) and its reservation rows with `counted`,
 * changed only the way transactions.ts changes them, with the rules of stock.ts, decideEnd and effectiveReservation.
 */
class Kept {
  columns: HeldColumns = { held_record: null, holds_expire_ms: null, full_until_ms: null }
  readonly rows: Array<{ lines: Line[]; expiresAtMs: number; status: ReservationStatus; version: number; counted: boolean }> = []
  withdrawn = false
  constructor(public quantities: number[]) {}

  active = () => !this.withdrawn && this.quantities.some((quantity) => quantity > 0)

  /** As settled(): the stored sum, less the counted holds run out at nowMs (which stop being counted). */
  private settled(nowMs: number) {
    const stored = storedHeld(this.columns.held_record, this.quantities.length)
    if (heldIsExact(this.columns.holds_expire_ms, nowMs)) return { held: stored, holdsExpireMs: this.columns.holds_expire_ms, settledNow: false }
    let held = stored
    for (const row of this.rows)
      if (row.counted && row.expiresAtMs <= nowMs) {
        held = withLines(held, row.lines, -1)
        row.counted = false
      }
    const counted = this.rows.filter((row) => row.counted).map((row) => row.expiresAtMs)
    return { held, holdsExpireMs: counted.length > 0 ? Math.min(...counted) : null, settledNow: true }
  }
  private write(held: number[], holdsExpireMs: number | null) {
    this.columns = heldColumns(this.quantities, held, holdsExpireMs)
  }

  hold(lines: Line[], expiresAtMs: number, nowMs: number): 'made' | 'short' | 'closed' {
    if (!this.active()) return 'closed'
    const settled = this.settled(nowMs)
    if (shortLines(lines, availableOf(this.quantities, settled.held, true)).length > 0) {
      if (settled.settledNow) this.write(settled.held, settled.holdsExpireMs)
      return 'short'
    }
    this.rows.push({ lines, expiresAtMs, status: 'held', version: 1, counted: true })
    this.write(withLines(settled.held, lines, 1), Math.min(settled.holdsExpireMs ?? expiresAtMs, expiresAtMs))
    return 'made'
  }

  end(k: number, action: Action, actor: Actor, nowMs: number): 'changed' | 'same' | 'refused' {
    const row = this.rows[k] as Kept['rows'][number]
    const { status } = effectiveReservation({ status: row.status, version: row.version, expires_at_ms: row.expiresAtMs, updated_at_ms: 0 }, nowMs)
    const decision = decideEnd(action, status, actor)
    if ('refuse' in decision) return 'refused'
    if (decision.to === null) return 'same'
    const settled = this.settled(nowMs)
    let held = settled.held
    if (status === 'held') held = withLines(held, row.lines, -1)
    const sign = decision.to === 'confirmed' ? -1 : decision.to === 'cancelled' && !this.withdrawn ? 1 : 0
    for (const line of row.lines) this.quantities[line.position] = (this.quantities[line.position] ?? 0) + sign * line.quantity
    if (status === 'held' || sign !== 0 || settled.settledNow) this.write(held, held.every((units) => units === 0) ? null : settled.holdsExpireMs)
    Object.assign(row, { status: decision.to, version: row.version + 1, counted: false })
    return 'changed'
  }

  /** As recordHoldExpiries: settle the listing, then record the run-out held ones as expired. */
  sweep(nowMs: number) {
    const settled = this.settled(nowMs)
    if (settled.settledNow) this.write(settled.held, settled.holdsExpireMs)
    for (const row of this.rows)
      if (row.status === 'held' && row.expiresAtMs <= nowMs) Object.assign(row, { status: 'expired', version: row.version + 1, counted: false })
  }

  patch(position: number, quantity: number, nowMs: number): 'done' | 'below' | 'closed' {
    if (this.withdrawn) return 'closed'
    const settled = this.settled(nowMs)
    if (belowHeld([{ position, quantity }], settled.held).length > 0) {
      if (settled.settledNow) this.write(settled.held, settled.holdsExpireMs)
      return 'below'
    }
    this.quantities[position] = quantity
    this.write(settled.held, settled.holdsExpireMs)
    return 'done'
  }

  withdraw(nowMs: number) {
    for (const row of this.rows) {
      if (row.status === 'held' && row.expiresAtMs > nowMs) Object.assign(row, { status: 'released', version: row.version + 1 })
      row.counted = false
    }
    this.columns = { held_record: null, holds_expire_ms: null, full_until_ms: null }
    this.withdrawn = true
  }

  /** As the stock read: the stored sum, less the counted holds run out at nowMs. */
  read(nowMs: number) {
    let held = storedHeld(this.columns.held_record, this.quantities.length)
    if (!heldIsExact(this.columns.holds_expire_ms, nowMs))
      for (const row of this.rows) if (row.counted && row.expiresAtMs <= nowMs) held = withLines(held, row.lines, -1)
    return { held, available: availableOf(this.quantities, held, this.active()) }
  }
}

type Command =
  | { kind: 'hold'; lines: Line[]; holdMs: number }
  | { kind: 'end'; pick: number; action: Action; actor: Actor }
  | { kind: 'tick'; ms: number }
  | { kind: 'toExpiry'; offsetMs: number }
  | { kind: 'sweep' }
  | { kind: 'patch'; position: number; quantity: number }

const ITEMS = 3
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('hold' as const),
      // Positions may repeat here: the rules must count them together even though the API refuses it earlier.
      lines: fc.array(fc.record({ position: fc.nat(ITEMS - 1), quantity: fc.integer({ min: 1, max: 4 }) }), { minLength: 1, maxLength: 3 }),
      holdMs: fc.constantFrom(1000, 2000, 3000),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.oneof(
      fc.record({
        kind: fc.constant('end' as const),
        pick: fc.nat(),
        action: fc.constantFrom<Action>('confirm', 'release', 'cancel'),
        actor: fc.constant<Actor>('marketplace'),
      }),
      fc.record({ kind: fc.constant('end' as const), pick: fc.nat(), action: fc.constant<Action>('cancel'), actor: fc.constant<Actor>('provider') }),
    ),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.constantFrom(1, 499, 999, 1000) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('toExpiry' as const), offsetMs: fc.constantFrom(-1, 0) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('sweep' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('patch' as const), position: fc.nat(ITEMS - 1), quantity: fc.nat(8) }) },
)
// The end of every hold: in one run of five, part-way through.
const withdrawAt = fc.oneof({ weight: 4, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat(80) })

const sumOfLines = (quantities: readonly number[], rows: ReadonlyArray<{ lines: Line[] }>) =>
  rows.reduce(
    (held, row) => withLines(held, row.lines, 1),
    quantities.map(() => 0),
  )

/** What must hold of the kept listing after every command, and that it reads as the model says. */
function checkKept(kept: Kept, model: Model, nowMs: number, step: string) {
  const { held, available } = kept.read(nowMs)
  assert.deepEqual(held, model.held(nowMs), `${step}: held as read is the model's`)
  assert.deepEqual(available, model.available(nowMs), `${step}: available as read is the model's`)
  assert.deepEqual(kept.quantities, model.quantities, `${step}: quantities`)
  held.forEach((units, k) => assert.ok(units <= (kept.quantities[k] ?? 0), `${step}: item ${k} held ${units} > quantity ${kept.quantities[k]}`))
  for (const units of available) assert.ok(units >= 0, `${step}: available ${units} < 0`)

  const counted = kept.rows.filter((row) => row.counted)
  const stored = storedHeld(kept.columns.held_record, kept.quantities.length)
  assert.deepEqual(stored, sumOfLines(kept.quantities, counted), `${step}: held_record is the sum of the counted lines`)
  stored.forEach((units, k) => assert.ok(units <= (kept.quantities[k] ?? 0), `${step}: stored held of item ${k} above its quantity`))
  const firstExpiry = counted.length > 0 ? Math.min(...counted.map((row) => row.expiresAtMs)) : null
  if (firstExpiry === null) assert.equal(kept.columns.holds_expire_ms, null, `${step}: nothing counted, no expiry kept`)
  else assert.ok(kept.columns.holds_expire_ms !== null && kept.columns.holds_expire_ms <= firstExpiry, `${step}: the kept expiry is not after the first`)
  assert.equal(kept.columns.held_record === null, counted.length === 0, `${step}: a record exactly while holds are counted`)
  // Discovery leaves a listing out while now < full_until_ms: never one with units to sell, always one without.
  const { full_until_ms: fullUntil } = kept.columns
  if (fullUntil !== null) {
    assert.equal(fullUntil, kept.columns.holds_expire_ms, `${step}: full until the first hold runs out`)
    if (nowMs < fullUntil)
      assert.ok(
        available.every((units) => units === 0),
        `${step}: full until ${fullUntil}, yet available ${available.join(',')}`,
      )
  }
  if (counted.length > 0 && stored.every((units, k) => units === kept.quantities[k]))
    assert.equal(fullUntil, kept.columns.holds_expire_ms, `${step}: every unit held, so full`)
  kept.rows.forEach((row, k) => {
    assert.equal(effectiveReservation({ ...row, expires_at_ms: row.expiresAtMs, updated_at_ms: 0 }, nowMs).status, model.statusAt(k, nowMs), `${step}: #${k}`)
    if (row.counted) assert.equal(row.status, 'held', `${step}: only held rows are counted`)
    if (row.status === 'held' && row.expiresAtMs > nowMs) assert.ok(row.counted, `${step}: a live hold is counted`)
  })
}

function runCommands(quantities: number[], commands: Command[], withdrawAt: number | null = null) {
  const model = new Model([...quantities])
  const kept = new Kept([...quantities])
  let nowMs = 0
  commands.forEach((c, n) => {
    const step = `#${n} ${JSON.stringify(c)} at ${nowMs}${n === withdrawAt ? ', then withdraw' : ''}`
    switch (c.kind) {
      case 'hold':
        assert.equal(kept.hold(c.lines, nowMs + c.holdMs, nowMs), model.hold(c.lines, nowMs + c.holdMs, nowMs), step)
        break
      case 'end':
        if (kept.rows.length > 0) {
          const k = c.pick % kept.rows.length
          assert.equal(kept.end(k, c.action, c.actor, nowMs), model.end(k, c.action, nowMs), step)
        }
        break
      case 'tick':
        nowMs += c.ms
        break
      case 'toExpiry': {
        const next = kept.rows.map((row) => row.expiresAtMs + c.offsetMs).filter((at) => at > nowMs)
        if (next.length > 0) nowMs = Math.min(...next)
        break
      }
      case 'sweep':
        kept.sweep(nowMs)
        break
      case 'patch':
        assert.equal(kept.patch(c.position, c.quantity, nowMs), model.patch(c.position, c.quantity, nowMs), step)
        break
    }
    if (n === withdrawAt) {
      kept.withdraw(nowMs)
      model.withdraw(nowMs)
    }
    checkKept(kept, model, nowMs, step)
  })
}

describe('the stock rules against a model (fast-check)', () => {
  test('any sequence of holds, ends, expiries, sweeps, PATCHes and time: exact, never oversold, the sum kept with the rows', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 8 }), { minLength: ITEMS, maxLength: ITEMS }),
        fc.array(command, { maxLength: 80, size: 'max' }),
        withdrawAt,
        (quantities, commands, at) => runCommands(quantities, commands, at),
      ),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 500) },
    )
  })

  test('two holds that run out in the same millisecond: both hold their units until one before, both free them at it', () => {
    runCommands(
      [2, 0, 0],
      [
        { kind: 'hold', lines: [{ position: 0, quantity: 1 }], holdMs: 2000 },
        { kind: 'tick', ms: 1000 },
        { kind: 'hold', lines: [{ position: 0, quantity: 1 }], holdMs: 1000 },
        { kind: 'hold', lines: [{ position: 0, quantity: 1 }], holdMs: 1000 },
        { kind: 'toExpiry', offsetMs: -1 },
        { kind: 'hold', lines: [{ position: 0, quantity: 1 }], holdMs: 1000 },
        { kind: 'toExpiry', offsetMs: 0 },
        { kind: 'hold', lines: [{ position: 0, quantity: 2 }], holdMs: 1000 },
      ],
    )
  })
})
