import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'

// Without Kysely or pg: the SQLite writer thread loads this module and all it imports again.

/** How long a SQLite write waits for another connection's lock before failing (then 503). */
const SQLITE_BUSY_TIMEOUT_MS = 5000

const SQLITE_MMAP_BYTES = 1024 * 1024 * 1024

const sleepCell = new Int32Array(new SharedArrayBuffer(4))

/**
 * Switching a fresh file to WAL while another process holds the write lock fails with SQLITE_BUSY at once, not
 * after busy_timeout (waiting could deadlock), as when two instances start on a new database: so it is retried.
 * Start-up only, hence the synchronous sleep.
 */
function enableWal(sqlite: SQLite.Database): void {
  const deadline = Date.now() + SQLITE_BUSY_TIMEOUT_MS
  for (;;) {
    try {
      const mode: unknown = sqlite.pragma('journal_mode = WAL', { simple: true })
      if (mode === 'wal') return
      if (Date.now() > deadline) throw new Error(`SQLite stayed in journal mode ${String(mode)}, not WAL`)
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw error
    }
    Atomics.wait(sleepCell, 0, 0, 10)
  }
}

/** WAL + synchronous=FULL: an acknowledged commit survives power loss. */
export function openSqliteConnection(path: string): SQLite.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const sqlite = new SQLite(path)
  // An in-memory database has no journal file to switch: it is never shared, nor durable.
  if (path !== ':memory:') enableWal(sqlite)
  sqlite.pragma('synchronous = FULL')
  sqlite.pragma('foreign_keys = ON')
  // Another connection (the writer thread, a second instance, the CLI) may hold the write lock briefly: wait, don't fail.
  sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`)
  // Discovery touches many scattered pages of a large file: mapped, they are not each copied through SQLite's small
  // page cache. The mapping holds no memory of its own: the kernel's page cache backs it.
  if (path !== ':memory:') sqlite.pragma(`mmap_size = ${SQLITE_MMAP_BYTES}`)
  return sqlite
}
