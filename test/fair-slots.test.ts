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

describe('ProviderBacklog: images each provider waits on', () => {
  test('adds while under the limit, refuses (counting nothing) what would go over, frees on removal', () => {
    const backlog = new ProviderBacklog(10)
    assert.equal(backlog.tryAdd('a', 6), true)
    assert.equal(backlog.tryAdd('a', 5), false)
    assert.equal(backlog.waitingOf('a'), 6)
    assert.equal(backlog.tryAdd('b', 10), true, 'each provider has its own bound')
    assert.equal(backlog.tryAdd('a', 4), true)
    backlog.remove('a', 6)
    assert.equal(backlog.waitingOf('a'), 4)
    backlog.remove('a', 4)
    assert.equal(backlog.waitingOf('a'), 0)
  })
})
