export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown }

interface Waiter<In, Out> {
  item: In
  resolve(value: Out): void
  reject(error: unknown): void
}

/**
 * At most `maxRunning` batches in flight per key (one unless told). Work submitted while they run waits, and
 * all of it goes as the next batch the moment one ends. Alone, an item starts at once (no timer, no added
 * latency); under load, batches grow to whatever arrived during one round trip.
 *
 * Every item is carried out by a batch that starts after it was submitted, never by one already running. For
 * reads that is what keeps read-your-writes: a request is never answered from a query that began before it
 * arrived, which could predate a create the client has already seen acknowledged.
 *
 * Used for PostgreSQL, where one statement for many items costs little more than one for a single item: page
 * reads of one page (identical: one query answers them all) and creates of one provider (one statement, one
 * lock on the provider's counter row, one commit).
 */
export class TrailingBatches<In, Out, Key extends string = string> {
  readonly #keys = new Map<Key, { running: number; waiting: Array<Waiter<In, Out>> }>()

  constructor(
    /**
     * Carries out one batch of a key's items: one outcome per item, in order. A rejection fails every item of
     * the batch.
     */
    private readonly run: (items: In[], key: Key) => Promise<Array<Settled<Out>>>,
    private readonly options: { maxBatch?: number; maxRunning?: number } = {},
  ) {}

  submit(key: Key, item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      let state = this.#keys.get(key)
      if (!state) this.#keys.set(key, (state = { running: 0, waiting: [] }))
      state.waiting.push({ item, resolve, reject })
      this.#pump(key, state)
    })
  }

  /** Starts batches of what waits, while fewer than maxRunning (default 1) of the key's batches run. */
  #pump(key: Key, state: { running: number; waiting: Array<Waiter<In, Out>> }): void {
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

  async #carryOut(key: Key, batch: Array<Waiter<In, Out>>): Promise<void> {
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
