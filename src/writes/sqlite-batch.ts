import type SQLite from 'better-sqlite3'
import { runSync, scriptSql, type SyncStatement } from '../db/script.js'
import { startScript, type ScriptJob } from './scripts.js'

export type JobOutcome = { ok: true; value: unknown } | { ok: false; error: { message: string; code?: string } }

/**
 * Runs write scripts on a SQLite connection, a batch at a time (the writer thread's group commit).
 *
 * A batch is one transaction, each script inside its own savepoint, so one that fails (a referenceId taken a
 * moment ago) is undone alone while the others commit. The commit, with its fsync and any WAL checkpoint, is
 * paid once per batch instead of once per write. Nobody is answered before the commit.
 */
export function sqliteBatchRunner(db: SQLite.Database): (jobs: readonly ScriptJob[]) => JobOutcome[] {
  // Scripts have a fixed set of statement texts: each is prepared once, the first time it is run.
  const statements = new Map<string, SyncStatement>()
  const prepare = (text: string): SyncStatement => {
    let statement = statements.get(text)
    if (!statement) statements.set(text, (statement = db.prepare(text) as unknown as SyncStatement))
    return statement
  }
  const begin = db.prepare('begin immediate')
  const commit = db.prepare('commit')
  const rollback = db.prepare('rollback')
  const savepoint = db.prepare('savepoint one_write')
  const release = db.prepare('release one_write')
  const undo = db.prepare('rollback to one_write')

  return (jobs) => {
    try {
      begin.run()
      const outcomes = jobs.map((job): JobOutcome => {
        savepoint.run()
        try {
          const value = runSync(startScript(scriptSql.sqlite, job), prepare)
          release.run()
          return { ok: true, value }
        } catch (error) {
          // Some errors (SQLITE_FULL, SQLITE_IOERR) end the whole transaction: then the batch fails below.
          if (!db.inTransaction) throw error
          undo.run()
          release.run()
          return failed(error)
        }
      })
      commit.run()
      return outcomes
    } catch (error) {
      if (db.inTransaction) rollback.run()
      return jobs.map(() => failed(error))
    }
  }
}

/** An error as it crosses to the main thread: its message and SQLite's code (what dialect.ts classifies). */
function failed(error: unknown): JobOutcome {
  const { message, code } = error as { message?: unknown; code?: unknown }
  return { ok: false, error: { message: String(message ?? error), ...(typeof code === 'string' ? { code } : {}) } }
}
