/**
 * A task run `intervalMs` after each run ends (never overlapping), or at once when woken. stop() waits for the run
 * in progress, so that the database can close after it.
 */
export class Periodic {
  #timer?: NodeJS.Timeout
  #running?: Promise<void>
  #stopped = true
  #wokenWhileRunning = false

  constructor(
    private readonly task: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    if (!this.#stopped) return
    this.#stopped = false
    this.wake()
  }

  /** Runs the task now, or right after the run in progress if there is one. */
  wake(): void {
    if (this.#stopped) return
    if (this.#running) {
      this.#wokenWhileRunning = true
      return
    }
    clearTimeout(this.#timer)
    this.#running = this.task()
      .catch(this.onError)
      .finally(() => {
        this.#running = undefined
        if (this.#stopped) return
        if (this.#wokenWhileRunning) {
          this.#wokenWhileRunning = false
          setImmediate(() => this.wake())
          return
        }
        // A pending turn never keeps the process alive by itself.
        this.#timer = setTimeout(() => this.wake(), this.intervalMs).unref()
      })
  }

  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    await this.#running
  }
}
