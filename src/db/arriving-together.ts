/**
 * What a worker thread's port delivers together, handled together: every message already in the port is
 * delivered before setImmediate runs, so the items pushed until then go to `handle` as one batch. The SQLite
 * writer thread uses it to commit what arrived together: a commit each cost far more than the work
 * (writes/sqlite-thread-worker.ts).
 */
export class ArrivingTogether<Item> {
  readonly #waiting: Item[] = []

  constructor(private readonly handle: (items: Item[]) => void) {}

  push(item: Item): void {
    this.#waiting.push(item)
    if (this.#waiting.length === 1) setImmediate(() => this.flush())
  }

  /** Handles what waits now (before a close, say); a scheduled flush then finds nothing. */
  flush(): void {
    if (this.#waiting.length > 0) this.handle(this.#waiting.splice(0))
  }
}
