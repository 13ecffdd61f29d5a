/** Gives up a place: leaves the line while waiting, frees the slot once granted. Calling it again does nothing. */
export type GiveUp = () => void

interface Waiter {
  owner: string
  start: () => void
  state: 'waiting' | 'granted' | 'done'
}

/**
 * The process's image fetches, shared fairly between providers. A free slot goes to the waiting owner holding
 * the fewest (round-robin among equals), and no owner holds more than `perOwner`, so slots are free for a new
 * provider even when another's fetches never end. Pure bookkeeping: `start` is called synchronously when granted.
 */
export class FairSlots {
  /** Three quarters of the slots, at least one: the rest are left to other providers. */
  readonly perOwner: number
  #running = 0
  readonly #runningBy = new Map<string, number>()
  /** Owners with someone waiting, each line in arrival order; the map's order is the rotation among equals. */
  readonly #lines = new Map<string, Set<Waiter>>()

  constructor(readonly slots: number) {
    this.perOwner = Math.max(1, Math.floor((slots * 3) / 4))
  }

  get running(): number {
    return this.#running
  }

  runningOf(owner: string): number {
    return this.#runningBy.get(owner) ?? 0
  }

  get waiting(): number {
    let count = 0
    for (const line of this.#lines.values()) count += line.size
    return count
  }

  take(owner: string, start: () => void): GiveUp {
    const waiter: Waiter = { owner, start, state: 'waiting' }
    let line = this.#lines.get(owner)
    if (!line) this.#lines.set(owner, (line = new Set()))
    line.add(waiter)
    this.#grant()
    return () => {
      const was = waiter.state
      waiter.state = 'done'
      if (was === 'waiting') this.#leaveLine(waiter)
      else if (was === 'granted') this.#release(owner)
    }
  }

  #leaveLine(waiter: Waiter): void {
    const line = this.#lines.get(waiter.owner)
    if (!line) return
    line.delete(waiter)
    if (line.size === 0) this.#lines.delete(waiter.owner)
  }

  #release(owner: string): void {
    this.#running -= 1
    const held = (this.#runningBy.get(owner) ?? 1) - 1
    if (held === 0) this.#runningBy.delete(owner)
    else this.#runningBy.set(owner, held)
    this.#grant()
  }

  #grant(): void {
    while (this.#running < this.slots) {
      const owner = this.#nextOwner()
      if (owner === undefined) return
      const line = this.#lines.get(owner) as Set<Waiter>
      const waiter = line.values().next().value as Waiter
      line.delete(waiter)
      // To the back of the rotation: among owners holding as many, the others come first next time.
      this.#lines.delete(owner)
      if (line.size > 0) this.#lines.set(owner, line)
      this.#running += 1
      this.#runningBy.set(owner, this.runningOf(owner) + 1)
      waiter.state = 'granted'
      waiter.start()
    }
  }

  #nextOwner(): string | undefined {
    let best: string | undefined
    let fewest = Infinity
    for (const owner of this.#lines.keys()) {
      const held = this.runningOf(owner)
      if (held < this.perOwner && held < fewest) {
        best = owner
        fewest = held
      }
    }
    return best
  }
}
