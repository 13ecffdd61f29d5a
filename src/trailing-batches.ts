export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown }

interface Waiter<In, Out> {
  item: In
  resolve(value: Out): void
  reject(error: unknown): void
}

/**
 * At most `maxRunning` batches in flight per key (default one); what is submitted meanwhile goes as the next batch
 * the moment one ends. Alone, an item starts at once; under load, batches grow to what arrived in one round trip.
 * An item is never carried out by a batch already running: that keeps read-your-writes for reads.
 */
export class TrailingBatches<In, Out> {
  readonly #keys = new Map<string, { running: number; waiting: Array<Waiter<In, Out>> }>()

  constructor(
    /** One outcome per item, in order; a rejection fails the whole batch. */
    private readonly run: (items: In[], key: string) => Promise<Array<Settled<Out>>>,
    private readonly options: { maxBatch?: number; maxRunning?: number } = {},
  ) {}

  submit(key: string, item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      let state = this.#keys.get(key)
      if (!state) this.#keys.set(key, (state = { running: 0, waiting: [] }))
      state.waiting.push({ item, resolve, reject })
      this.#pump(key, state)
    })
  }

  #pump(key: string, state: { running: number; waiting: Array<Waiter<In, Out>> }): void {
    const { maxBatch = Number.POSITIVE_INFINITY, maxRunning = 1 } = this.options
    while (state.running < maxRunning && state.waiting.length > 0) {
      const batch = state.waiting.splice(0, maxBatch)
      state.running += 1
      // #carryOut settles every waiter itself and never rejects.
      void this.#carryOut(key, batch).finally(() => {
        state.running -= 1
        if (state.running === 0 && state.waiting.length === 0) this.#keys.delete(key)
        else this.#pump(key, state)
      })
    }
  }

  async #carryOut(key: string, batch: Array<Waiter<In, Out>>): Promise<void> {
    let outcomes: Array<Settled<Out>>
    try {
      outcomes = await this.run(
        batch.map((waiter) => waiter.item),
        key,
      )
    } catch (error) {
      outcomes = batch.map(() => ({ ok: false, error }))
    }
    batch.forEach((waiter, i) => {
      const outcome = outcomes[i]
      if (outcome?.ok) waiter.resolve(outcome.value)
      else waiter.reject(outcome ? outcome.error : new Error('a batch returned fewer outcomes than items'))
    })
  }
}

/**
 * A batch's run for TrailingBatches that, should the batch fail, carries out each item alone, one after the other:
 * an item never fails for another's sake (a batch shares a transaction, never a fate).
 */
export function aloneOnFailure<In, Out>(store: (items: In[], key: string) => Promise<Out[]>) {
  return async (items: In[], key: string): Promise<Array<Settled<Out>>> => {
    try {
      return (await store(items, key)).map((value) => ({ ok: true, value }))
    } catch (error) {
      if (items.length === 1) throw error
      const outcomes: Array<Settled<Out>> = []
      for (const item of items) {
        try {
          outcomes.push({ ok: true, value: ((await store([item], key)) as [Out])[0] })
        } catch (alone) {
          outcomes.push({ ok: false, error: alone })
        }
      }
      return outcomes
    }
  }
}
