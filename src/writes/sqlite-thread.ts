import { ModuleThread } from '../db/module-worker.js'
import type { JobOutcome } from './sqlite-batch.js'
import type { ScriptJob } from './scripts.js'

export type ThreadRequest = { type: 'run'; id: number; job: ScriptJob } | { type: 'close' }
/** One batch's answers, after its commit, and how long the batch took (statements and commit). */
export interface ThreadReply {
  seconds: number
  outcomes: Array<{ id: number; outcome: JobOutcome }>
}

/** The value a script returned, or the error it failed with, as the rest of the service classifies errors (dialect.ts reads `code`). */
export function settle(outcome: JobOutcome): unknown {
  if (outcome.ok) return outcome.value
  throw Object.assign(new Error(outcome.error.message), { name: 'SqliteError', code: outcome.error.code })
}

/**
 * Where a SQLite file is written. better-sqlite3 is synchronous: on the event loop, every write's statements,
 * its commit (an fsync) and now and then a WAL checkpoint (copying ~4 MB back into the database and another
 * fsync) stopped every other request while they ran. So a file database is written by a worker thread on its
 * own connection (WAL lets the main connection keep reading meanwhile), writes that arrive together share one
 * commit, and a lock held by another process is waited for there, not on the event loop.
 *
 * The thread starts with the first write and is started again if it dies.
 */
export class SqliteWriteThread {
  readonly #thread: ModuleThread<{ resolve(value: unknown): void; reject(error: unknown): void; job: ScriptJob }, ThreadReply>

  constructor(
    path: string,
    /** Told each write's script name and its batch's duration (statements and commit). */
    observe: (job: ScriptJob, seconds: number) => void,
  ) {
    // A thread that dies fails what it held. Whether a failed batch committed is unknown to the client either
    // way: a retried create with the same referenceId is answered as a replay if it did, a retried change finds it made.
    this.#thread = new ModuleThread(import.meta.url, 'sqlite-thread-worker', { path }, 'SQLite writer thread', ({ seconds, outcomes }: ThreadReply) => {
      for (const { id, outcome } of outcomes) {
        const pending = this.#thread.take(id)
        if (!pending) continue
        observe(pending.job, seconds)
        try {
          pending.resolve(settle(outcome))
        } catch (error) {
          pending.reject(error)
        }
      }
    })
  }

  run(job: ScriptJob): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.#thread.send((id) => ({ type: 'run', id, job }) satisfies ThreadRequest, { resolve, reject, job })
    })
  }

  close(): Promise<void> {
    return this.#thread.close({ type: 'close' } satisfies ThreadRequest)
  }
}
