import { sql, type Kysely } from 'kysely'
import type { Database, DialectName } from './connection.js'
import { beginExclusive } from './dialect.js'
import * as initial from '../migrations/2026-11-21-initial.js'
import * as listingItemsJson from '../migrations/2026-11-21-listing-items-json.js'
import * as postgresItemsWithoutFk from '../migrations/2026-11-22-postgres-items-without-fk.js'
import * as listingLifecycle from '../migrations/2026-11-23-listing-lifecycle.js'
import * as webhooks from '../migrations/2026-11-24-webhooks.js'
import * as discovery from '../migrations/2026-11-24-discovery.js'
import * as claimsByEndpoint from '../migrations/2026-11-24-claims-by-endpoint.js'
import * as discoveryCells from '../migrations/2026-11-24-discovery-cells.js'
import * as serviceKeys from '../migrations/2026-11-25-service-keys.js'
import * as consoleSessions from '../migrations/2026-11-25-console-sessions.js'
import * as itemsStoredOnce from '../migrations/2026-11-25-items-stored-once.js'

interface Migration {
  name: string
  /** Most migrations are the same SQL for both dialects and ignore `dialect`. */
  up(db: Kysely<any>, dialect: DialectName): Promise<void>
}

/** In order; names are dated and never reused. Exported for tests that stop before one. */
export const migrations: readonly Migration[] = [
  { name: '2026-11-21-initial', up: initial.up },
  { name: '2026-11-21-listing-items-json', up: listingItemsJson.up },
  { name: '2026-11-22-postgres-items-without-fk', up: postgresItemsWithoutFk.up },
  { name: '2026-11-23-listing-lifecycle', up: listingLifecycle.up },
  { name: '2026-11-24-webhooks', up: webhooks.up },
  { name: '2026-11-24-discovery', up: discovery.up },
  { name: '2026-11-24-claims-by-endpoint', up: claimsByEndpoint.up },
  { name: '2026-11-24-discovery-cells', up: discoveryCells.up },
  { name: '2026-11-25-service-keys', up: serviceKeys.up },
  { name: '2026-11-25-console-sessions', up: consoleSessions.up },
  { name: '2026-11-25-items-stored-once', up: itemsStoredOnce.up },
]

/**
 * Applies pending migrations in one transaction under an exclusive lock, so it is idempotent and safe when
 * several instances start at once: the second waits, then finds nothing to do. Returns the names applied.
 */
export async function migrate(database: Database): Promise<string[]> {
  return database.unbounded.connection().execute(async (conn) => {
    await beginExclusive(database.dialect, conn)
    try {
      await sql`create table if not exists schema_migrations (
        name text primary key,
        applied_at_ms bigint not null
      )`.execute(conn)
      const done = await sql<{ name: string }>`select name from schema_migrations`.execute(conn)
      const applied = new Set(done.rows.map((row) => row.name))
      const pending = migrations.filter((m) => !applied.has(m.name))
      for (const migration of pending) {
        await migration.up(conn, database.dialect)
        await sql`insert into schema_migrations (name, applied_at_ms) values (${migration.name}, ${Date.now()})`.execute(
          conn,
        )
      }
      await sql`commit`.execute(conn)
      return pending.map((m) => m.name)
    } catch (error) {
      await sql`rollback`.execute(conn).catch(() => {})
      throw error
    }
  })
}
