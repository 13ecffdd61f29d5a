import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'

// Its own module, without Kysely or pg: the SQLite writer thread (sqlite-writer-worker.ts) opens
// its connection with it, and every module it imports is loaded again in that thread.

/** How long a SQLite write waits for another connection's lock before failing (then 503). */
const SQLITE_BUSY_TIMEOUT_MS = 5000

/** Up to this much of the database file is read through a memory mapping (pragma mmap_size). */
const SQLITE_MMAP_BYTES = 1024 * 1024 * 1024

const sleepCell = new Int32Array(new SharedArrayBuffer(4))

/**
 * Switching a fresh file to WAL is a reader asking to write, and while another process holds the write lock
 * SQLite answers that with SQLITE_BUSY at once instead of waiting on busy_timeout (waiting could deadlock): two
 * instances starting together on a new database failed this way (32 of 300 paired opens in a reproduction). So the switch is retried, for as
 * long as a lock is waited for elsewhere. Start-up only, hence the synchronous sleep.
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

/**
 * A SQLite connection as the service uses one, from any thread. WAL + synchronous=FULL: an acknowledged commit
 * survives power loss (docs/operations.md#sqlite-the-default).
 */
export function openSqliteConnection(path: string): SQLite.Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const sqlite = new SQLite(path)
  // An in-memory database has no journal file to switch: it is never shared, nor durable.
  if (path !== ':memory:') enableWal(sqlite)
  sqlite.pragma('synchronous = FULL')
  sqlite.pragma('foreign_keys = ON')
  // Another connection (the writer thread, a second instance, the CLI) may hold the write lock briefly: wait, don't fail.
  sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`)
  // Reads of the database file through memory mapping instead of a read() per page into SQLite's own 2 MB page
  // cache: at 1M listings a discovery query touched a few hundred scattered pages (then its R*Tree nodes and each
  // candidate's row), and copying each one through the cache made the same query cost 1.5-4x what it did at 100k
  // (docs/benchmarks.md). The mapping holds no memory of its own: the kernel's page cache backs it.
  if (path !== ':memory:') sqlite.pragma(`mmap_size = ${SQLITE_MMAP_BYTES}`)
  return sqlite
}
