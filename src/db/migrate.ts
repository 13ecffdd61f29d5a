import { sql, type Kysely } from 'kysely'
import { POSTGRES_ROLE_SETTINGS, type Database, type DialectName } from './connection.js'
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
import * as shardReadyKeys from '../migrations/2026-11-25-shard-ready-keys.js'
import * as hostedImages from '../migrations/2026-11-27-hosted-images.js'
import * as eventOwners from '../migrations/2026-11-27-event-owners.js'
import * as reservations from '../migrations/2026-11-27-reservations.js'

interface Migration {
  name: string
  up(db: Kysely<any>, dialect: DialectName): Promise<void>
}

/** In order; names are dated and never reused, and a released migration's code never changes. */
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
  { name: '2026-11-25-shard-ready-keys', up: shardReadyKeys.up },
  { name: '2026-11-27-hosted-images', up: hostedImages.up },
  { name: '2026-11-27-event-owners', up: eventOwners.up },
  { name: '2026-11-27-reservations', up: reservations.up },
]

/**
 * Applies pending migrations in one transaction under an exclusive lock: of instances starting at once, the second
 * waits, then finds nothing to do. Returns the names applied. The PostgreSQL role settings follow the code, not the
 * schema's history, so they are set on every run rather than by a dated migration.
 */
export async function migrate(database: Database): Promise<string[]> {
  return database.unbounded.connection().execute(async (conn) => {
    await beginExclusive(database.dialect, conn)
    try {
      await sql`create table if not exists schema_migrations (
        name text primary key,
        applied_at_ms bigint not null
      )`.execute(conn)
      const pending = await unapplied(conn)
      for (const migration of pending) {
        await migration.up(conn, database.dialect)
        await sql`insert into schema_migrations (name, applied_at_ms) values (${migration.name}, ${Date.now()})`.execute(conn)
      }
      if (database.dialect === 'postgres') await setRoleSettings(conn)
      await sql`commit`.execute(conn)
      return pending.map((m) => m.name)
    } catch (error) {
      await sql`rollback`.execute(conn).catch(() => {})
      throw error
    }
  })
}

/** The migrations this code knows that schema_migrations does not list. */
async function unapplied(db: Kysely<any>): Promise<Migration[]> {
  const done = await sql<{ name: string }>`select name from schema_migrations`.execute(db)
  const applied = new Set(done.rows.map((row) => row.name))
  return migrations.filter((m) => !applied.has(m.name))
}

/** The connecting role's defaults in the current database. */
async function roleSettings(conn: Kysely<any>): Promise<Map<string, string>> {
  const { rows } = await sql<{ setting: string }>`
    select unnest(s.setconfig) as setting
    from pg_db_role_setting s
    where s.setrole = (select oid from pg_roles where rolname = current_user)
      and s.setdatabase = (select oid from pg_database where datname = current_database())`.execute(conn)
  return new Map(rows.map(({ setting }) => [setting.slice(0, setting.indexOf('=')), setting.slice(setting.indexOf('=') + 1)]))
}

/**
 * Every later session starts with the role's defaults, through a pooler or not, and a standby has them too (the
 * catalog is replicated). set_config gives them to the connection in hand, opened before they existed.
 */
async function setRoleSettings(conn: Kysely<any>): Promise<void> {
  const current = await roleSettings(conn)
  for (const [name, value] of Object.entries(POSTGRES_ROLE_SETTINGS)) {
    if (current.get(name) === value) continue
    // ALTER ROLE takes no parameters; the name is ours and the value a literal quoted by format(%L).
    await sql`do $$ begin execute format('alter role current_user in database %I set ${sql.raw(name)} = %L', current_database(), ${sql.lit(value)}); end $$`.execute(
      conn,
    )
  }
  for (const [name, value] of Object.entries(POSTGRES_ROLE_SETTINGS)) {
    await sql`select set_config(${name}, ${value}, false)`.execute(conn)
  }
}

/** The POSTGRES_ROLE_SETTINGS the connecting role lacks here, as `name = value`: `migrate` may have run as another role. */
export async function missingRoleSettings(database: Database): Promise<string[]> {
  if (database.dialect !== 'postgres') return []
  const current = await roleSettings(database.kysely)
  return Object.entries(POSTGRES_ROLE_SETTINGS)
    .filter(([name, value]) => current.get(name) !== value)
    .map(([name, value]) => `${name} = ${value}`)
}

/** Migrations this code knows that the database has not applied (for `serve --no-migrate`). */
export async function pendingMigrations(database: Database): Promise<string[]> {
  const exists =
    database.dialect === 'postgres'
      ? await sql<{ found: boolean }>`select to_regclass('schema_migrations') is not null as found`.execute(database.kysely)
      : await sql<{ found: number }>`select count(*) as found from sqlite_master where type = 'table' and name = 'schema_migrations'`.execute(database.kysely)
  const pending = exists.rows[0]?.found ? await unapplied(database.kysely) : migrations
  return pending.map((m) => m.name)
}
