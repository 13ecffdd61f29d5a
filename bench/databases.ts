/** The benchmarks' databases: a fresh one per dialect, and what a bulk load leaves to do before measuring. */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import type { Database } from '../src/db/connection.js'
import { createTestDatabase } from '../test/helper.js'

export type Dialect = 'sqlite' | 'postgres'

export const DIALECT_TITLES: Record<Dialect, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }

export interface FreshDatabase {
  url: string
  drop(): Promise<void>
}

/** A SQLite file in a folder of its own, or a new PostgreSQL database at TEST_POSTGRES_URL (as the tests make). */
export async function freshDatabase(dialect: Dialect): Promise<FreshDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'listing-bench-'))
    return { url: `sqlite:${join(dir, 'bench.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  return createTestDatabase('postgres')
}

/** Whether PostgreSQL answers at TEST_POSTGRES_URL; when it does not, says so (its half of a benchmark is skipped). */
export async function postgresAnswers(): Promise<boolean> {
  try {
    await (await createTestDatabase('postgres')).drop()
    return true
  } catch (error) {
    console.warn(`PostgreSQL does not answer (${error instanceof Error ? error.message : String(error)}): its half is skipped`)
    return false
  }
}

/**
 * After a bulk load the database's writes are still going out: PostgreSQL's checkpoint and the kernel's writeback
 * of a GB of dirty pages ran during the first measurements and took up to 40% of the ceiling itself (2026-11-24
 * 21:23 run). Checkpoint, then sync, before measuring. PostgreSQL also gets what autovacuum would have done by then
 * (it is off on our development server): ANALYZE gathers the planner's statistics; VACUUM marks the pages
 * all-visible, without which an index-only scan visits every row's page too (EXPLAIN: Heap Fetches).
 */
export async function settle(database: Database): Promise<void> {
  if (database.dialect === 'postgres') {
    // Unbounded, on one connection without the role's statement timeout: a VACUUM of a large table on a busy machine
    // outlasts both bounds of a request's query.
    await database.unbounded.connection().execute(async (connection) => {
      await sql`set statement_timeout = 0`.execute(connection)
      await sql`vacuum analyze`.execute(connection)
      await sql`checkpoint`.execute(connection)
      await sql`reset statement_timeout`.execute(connection)
    })
  } else {
    await sql`pragma wal_checkpoint(truncate)`.execute(database.kysely)
  }
  execFileSync('sync')
}
