import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { FairSlots, type GiveUp } from '../src/images/fair-slots.js'
import { ProviderBacklog } from '../src/images/provider-backlog.js'

/** Takes a slot for `owner`, recording in `started` the label of each task when it is granted. */
function taker(slots: FairSlots, started: string[]) {
  return (owner: string, label = owner): GiveUp => slots.take(owner, () => started.push(label))
}

describe('FairSlots: the process fetches shared between providers', () => {
  test('a provider alone gets slots at once, up to its share; the rest wait in arrival order', () => {
    const slots = new FairSlots(4)
    const started: string[] = []
    const take = taker(slots, started)
    const giveUps = ['a1', 'a2', 'a3', 'a4', 'a5'].map((label) => take('a', label))
    assert.deepEqual(started, ['a1', 'a2', 'a3'])
    assert.equal(slots.running, 3)
    assert.equal(slots.waiting, 2)
    giveUps[0]?.()
    assert.deepEqual(started, ['a1', 'a2', 'a3', 'a4'])
  })

  test('the default share leaves a quarter of the slots to other providers', () => {
    assert.equal(new FairSlots(4).perOwner, 3)
    assert.equal(new FairSlots(64).perOwner, 48)
    assert.equal(new FairSlots(1).perOwner, 1)
  })

  test("one provider's many waiting probes do not starve another's single probe: it gets a slot at once", () => {
    const slots = new FairSlots(4)
    const started: string[] = []
    const take = taker(slots, started)
    for (let i = 0; i < 100; i++) take('attacker', `attacker-${i}`)
    take('victim')
    assert.ok(started.includes('victim'), 'the slot the attacker may not hold is the victim’s')
    assert.equal(slots.runningOf('attacker'), 3)
  })

  test('a freed slot goes to the waiting provider holding the fewest, not to the longest line', () => {
    const slots = new FairSlots(4)
    const started: string[] = []
    const take = taker(slots, started)
    const attacker = Array.from({ length: 10 }, (_, i) => take('attacker', `attacker-${i}`))
    for (const label of ['victim-1', 'victim-2', 'victim-3']) take('victim', label)
    assert.deepEqual(started, ['attacker-0', 'attacker-1', 'attacker-2', 'victim-1'])
    attacker[0]?.()
    // The attacker now holds 2, under its share, and the victim 1: the victim's turn, though its line is shorter.
    assert.equal(started.at(-1), 'victim-2')
    attacker[1]?.()
    // The attacker holds 1 and the victim 2: the attacker's turn.
    assert.equal(started.at(-1), 'attacker-3')
  })

  test('providers holding as many take turns (round-robin)', () => {
    const slots = new FairSlots(1)
    const started: string[] = []
    const take = taker(slots, started)
    const first = take('x', 'x0')
    const rest = [take('a', 'a1'), take('a', 'a2'), take('b', 'b1'), take('b', 'b2'), take('c', 'c1')]
    first()
    for (let i = 0; i < rest.length; i++) {
      // Give up the slot of the most recently started task.
      const label = started.at(-1) as string
      const index = ['a1', 'a2', 'b1', 'b2', 'c1'].indexOf(label)
      rest[index]?.()
    }
    assert.deepEqual(started, ['x0', 'a1', 'b1', 'c1', 'a2', 'b2'])
  })

  test('giving up while waiting leaves the line and starts nothing; giving up twice frees one slot once', () => {
    const slots = new FairSlots(1)
    const started: string[] = []
    const take = taker(slots, started)
    const running = take('a', 'a1')
    const gone = take('a', 'a2')
    take('b', 'b1')
    gone()
    assert.equal(slots.waiting, 1, 'only b1 waits')
    running()
    running()
    assert.deepEqual(started, ['a1', 'b1'])
    assert.equal(slots.running, 1)
    assert.equal(slots.waiting, 0)
  })

  test('a task that gives up its slot as soon as it starts lets the next one start', () => {
    const slots = new FairSlots(1)
    const started: string[] = []
    const giveUps = new Map<string, GiveUp>()
    for (const label of ['a', 'b', 'c']) {
      giveUps.set(
        label,
        slots.take(label, () => {
          started.push(label)
          // Straight after its grant (take() has not returned yet when a free slot starts it at once).
          queueMicrotask(() => giveUps.get(label)?.())
        }),
      )
    }
    return new Promise<void>((resolve) => {
      setImmediate(() => {
        assert.deepEqual(started, ['a', 'b', 'c'])
        assert.equal(slots.running, 0)
        resolve()
      })
    })
  })
})

describe('ProviderBacklog: images each provider waits on, and whether a create fits in the budget', () => {
  /** A backlog on a clock the test moves: 48 slots a provider, 8 fetches a create, a 5 s budget. */
  function backlog(limit = Infinity) {
    const clock = { ms: 0 }
    return { clock, backlog: new ProviderBacklog({ budgetMs: 5000, limit, slotsPerProvider: 48, perCreate: 8, now: () => clock.ms }) }
  }

  test('adds while under the limit, refuses (counting nothing) what would go over, frees on removal', () => {
    const { backlog: bounded } = backlog(10)
    assert.equal(bounded.tryAdd('a', 6), undefined)
    assert.deepEqual(bounded.tryAdd('a', 5), { reason: 'limit', waiting: 6, limit: 10 })
    assert.deepEqual(bounded.tryAdd('a', 5), { reason: 'limit', waiting: 6, limit: 10 }, 'the refused create counted nothing')
    assert.equal(bounded.tryAdd('b', 10), undefined, 'each provider has its own bound')
    assert.equal(bounded.tryAdd('a', 4), undefined)
    bounded.remove('a', 6)
    assert.deepEqual(bounded.tryAdd('a', 7), { reason: 'limit', waiting: 4, limit: 10 })
    bounded.remove('a', 4)
    assert.equal(bounded.tryAdd('a', 10), undefined)
  })

  test('a burst of images that answer quickly is admitted whole: 10 creates of 51 images', () => {
    const { clock, backlog: b } = backlog()
    const ends: Array<() => void> = []
    for (let create = 0; create < 10; create++) {
      assert.equal(b.tryAdd('menu', 51), undefined, `create ${create}`)
      // Its first fetches start, and the earlier ones end, 20 ms each.
      for (let i = 0; i < 8; i++) ends.push(b.fetchStarted('menu'))
      clock.ms += 20
      for (const end of ends.splice(0, 4)) end()
    }
  })

  test("images that never answer raise the estimate while they run: that provider's next creates are refused, no other's", () => {
    const { clock, backlog: b } = backlog()
    assert.equal(b.tryAdd('attacker', 101), undefined, 'nothing measured yet: admitted')
    for (let i = 0; i < 8; i++) b.fetchStarted('attacker')
    clock.ms += 100
    assert.equal(b.tryAdd('attacker', 16), undefined, '2 rounds of 100 ms fit in 5 s')
    // Two rounds of fetches running 3 s so far.
    clock.ms += 2900
    const refusal = b.tryAdd('attacker', 16)
    assert.equal(refusal?.reason, 'budget')
    assert.ok(refusal.reason === 'budget' && refusal.expectedMs > 5000 && refusal.checks === 2, JSON.stringify(refusal))
    assert.deepEqual(b.tryAdd('attacker', 16), refusal, 'the refused create counted nothing')
    assert.equal(b.tryAdd('victim', 1), undefined, 'another provider is measured by its own fetches')
  })

  test('ended fetches are measured until the provider has nothing under way; then it starts afresh', () => {
    const { clock, backlog: b } = backlog()
    assert.equal(b.tryAdd('p', 51), undefined)
    const ends = Array.from({ length: 8 }, () => b.fetchStarted('p'))
    clock.ms += 1000
    for (const end of ends) end()
    // 7 rounds of 8 at 1 s each: 7 s.
    assert.equal(b.tryAdd('p', 51)?.reason, 'budget')
    assert.equal(b.tryAdd('p', 8), undefined, 'one round of 1 s fits')
    b.remove('p', 51)
    b.remove('p', 8)
    assert.equal(b.tryAdd('p', 51), undefined, 'nothing under way: nothing measured')
  })

  test('a fetch still running when its create ended is measured until it ends', () => {
    const { clock, backlog: b } = backlog()
    assert.equal(b.tryAdd('p', 8), undefined)
    const ends = Array.from({ length: 8 }, () => b.fetchStarted('p'))
    b.remove('p', 8)
    clock.ms += 4000
    assert.equal(b.tryAdd('p', 9)?.reason, 'budget', '2 rounds of 4 s')
    for (const end of ends) end()
    assert.equal(b.tryAdd('p', 9), undefined)
  })

  test('a fetch of no admitted create (a single probe) is not measured', () => {
    const { clock, backlog: b } = backlog()
    const end = b.fetchStarted('p')
    clock.ms += 60_000
    assert.equal(b.tryAdd('p', 101), undefined)
    end()
  })
})
