/** Runs at most `limit` tasks at once; the rest wait their turn in order. */
export class Semaphore {
  #running = 0
  readonly #waiting: Array<() => void> = []

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) await new Promise<void>((resolve) => this.#waiting.push(resolve))
    this.#running += 1
    try {
      return await task()
    } finally {
      this.#running -= 1
      this.#waiting.shift()?.()
    }
  }
}
