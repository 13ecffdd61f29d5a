export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown }

interface Waiter<In, Out> {
  item: In
  resolve(value: Out): void
  reject(error: unknown): void
}

/**
 * At most one batch in flight per key. Work submitted while a key's batch runs waits, and all of it goes as the
 * next batch the moment the running one ends. Alone, an item starts at once (no timer, no added latency);
 * under load, batches grow to whatever arrived during one round trip.
 *
 * Every item is carried out by a batch that starts after it was submitted, never by one already running. For
 * reads that is what keeps read-your-writes: a request is never answered from a query that began before it
 * arrived, which could predate a create the client has already seen acknowledged.
 *
 * Used for PostgreSQL, where one statement for many items costs little more than one for a single item: page
 * reads of one page (identical: one query answers them all) and creates of one provider (one statement, one
 * lock on the provider's counter row, one commit).
 */
export class TrailingBatches<In, Out> {
  readonly #keys = new Map<string, { waiting: Array<Waiter<In, Out>> }>()

  constructor(
    /** Carries out one batch: one outcome per item, in order. A rejection fails every item of the batch. */
    private readonly run: (items: In[]) => Promise<Array<Settled<Out>>>,
    private readonly maxBatch = Number.POSITIVE_INFINITY,
  ) {}

  submit(key: string, item: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      const waiter = { item, resolve, reject }
      const running = this.#keys.get(key)
      if (running) running.waiting.push(waiter)
      else this.#start(key, [waiter])
    })
  }

  #start(key: string, batch: Array<Waiter<In, Out>>): void {
    const state = { waiting: [] as Array<Waiter<In, Out>> }
    this.#keys.set(key, state)
    const settle = (outcomes: Array<Settled<Out>>) => {
      batch.forEach((waiter, i) => {
        const outcome = outcomes[i]
        if (outcome?.ok) waiter.resolve(outcome.value)
        else waiter.reject(outcome ? outcome.error : new Error('a batch returned fewer outcomes than items'))
      })
    }
    const next = () => {
      const { waiting } = state
      if (waiting.length === 0) {
        this.#keys.delete(key)
        return
      }
      this.#start(key, waiting.splice(0, this.maxBatch))
      // More than one batch's worth was waiting: the rest waits for the batch after.
      this.#keys.get(key)?.waiting.push(...waiting)
    }
    let result: Promise<Array<Settled<Out>>>
    try {
      result = this.run(batch.map((waiter) => waiter.item))
    } catch (error) {
      result = Promise.reject(error)
    }
    result.then(settle, (error: unknown) => settle(batch.map(() => ({ ok: false, error })))).finally(next)
  }
}
