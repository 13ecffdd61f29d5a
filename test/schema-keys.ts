import { sql, type Kysely } from 'kysely'
import type { DialectName } from '../src/db/connection.js'

/** A table as the database describes it: its columns, and the columns of each key, in key order. */
export interface TableKeys {
  name: string
  columns: string[]
  /** Primary key, unique constraints and unique indexes: each a list of columns (an expression reads as `?`). */
  uniques: Array<{ name: string; columns: string[] }>
  foreignKeys: Array<{ name: string; columns: string[]; references: string }>
}

/** Every table of the database's schema with its keys, read from the catalog (sqlite_master and pragmas, or pg_catalog). */
export async function readTableKeys(db: Kysely<any>, dialect: DialectName): Promise<TableKeys[]> {
  return dialect === 'sqlite' ? sqliteKeys(db) : postgresKeys(db)
}

async function sqliteKeys(db: Kysely<any>): Promise<TableKeys[]> {
  const { rows: tables } = await sql<{ name: string }>`
    select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name`.execute(db)
  const described: TableKeys[] = []
  for (const { name } of tables) {
    const { rows: columns } = await sql<{ name: string; pk: number }>`select name, pk from pragma_table_info(${name})`.execute(db)
    const uniques: TableKeys['uniques'] = []
    // A rowid table's INTEGER PRIMARY KEY has no index of its own; every other key has one (origin pk, u or c).
    const primary = columns.filter((column) => column.pk > 0).sort((a, b) => a.pk - b.pk)
    if (primary.length > 0) uniques.push({ name: `${name} primary key`, columns: primary.map((column) => column.name) })
    const { rows: indexes } = await sql<{ name: string; unique: number; origin: string }>`
      select name, "unique", origin from pragma_index_list(${name})`.execute(db)
    for (const index of indexes) {
      if (index.unique !== 1 || index.origin === 'pk') continue
      const { rows: keyColumns } = await sql<{ name: string | null }>`select name from pragma_index_info(${index.name}) order by seqno`.execute(db)
      uniques.push({ name: index.name, columns: keyColumns.map((column) => column.name ?? '?') })
    }
    const { rows: references } = await sql<{ id: number; from: string; table: string }>`
      select id, "from", "table" from pragma_foreign_key_list(${name}) order by id, seq`.execute(db)
    const foreignKeys = new Map<number, { name: string; columns: string[]; references: string }>()
    for (const reference of references) {
      const key = foreignKeys.get(reference.id) ?? { name: `${name} foreign key ${reference.id}`, columns: [], references: reference.table }
      key.columns.push(reference.from)
      foreignKeys.set(reference.id, key)
    }
    described.push({ name, columns: columns.map((column) => column.name), uniques, foreignKeys: [...foreignKeys.values()] })
  }
  return described
}

async function postgresKeys(db: Kysely<any>): Promise<TableKeys[]> {
  const { rows: columns } = await sql<{ table: string; column: string }>`
    select c.relname::text as table, a.attname::text as column
    from pg_class c join pg_attribute a on a.attrelid = c.oid
    where c.relnamespace = current_schema()::regnamespace and c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped
    order by c.relname, a.attnum`.execute(db)
  // Unique indexes, which include every primary key and unique constraint: an expression column reads as `?`.
  const { rows: uniques } = await sql<{ table: string; name: string; columns: string[] }>`
    select t.relname::text as table, i.relname::text as name,
      array(select coalesce(a.attname::text, '?') from unnest(x.indkey) with ordinality as k(attnum, n)
            left join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum
            where k.n <= x.indnkeyatts order by k.n) as columns
    from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
    where t.relnamespace = current_schema()::regnamespace and x.indisunique`.execute(db)
  const { rows: foreignKeys } = await sql<{ table: string; name: string; columns: string[]; references: string }>`
    select t.relname::text as table, c.conname::text as name, r.relname::text as references,
      array(select a.attname::text from unnest(c.conkey) with ordinality as k(attnum, n)
            join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum order by k.n) as columns
    from pg_constraint c join pg_class t on t.oid = c.conrelid join pg_class r on r.oid = c.confrelid
    where t.relnamespace = current_schema()::regnamespace and c.contype = 'f'`.execute(db)
  const tables = new Map<string, TableKeys>()
  for (const { table, column } of columns) {
    const entry = tables.get(table) ?? { name: table, columns: [], uniques: [], foreignKeys: [] }
    entry.columns.push(column)
    tables.set(table, entry)
  }
  for (const { table, name, columns: keyColumns } of uniques) tables.get(table)?.uniques.push({ name, columns: keyColumns })
  for (const { table, ...key } of foreignKeys) tables.get(table)?.foreignKeys.push(key)
  return [...tables.values()].sort((a, b) => (a.name < b.name ? -1 : 1))
}

/**
 * Tables that hold no one tenant's data, or are looked up before the tenant is known: none is placed by a tenant
 * column (docs/sharding.md says what each becomes on a tenant-sharded PostgreSQL). Each says why.
 */
export const GLOBAL_TABLES: Readonly<Record<string, string>> = {
  // The provider itself: its id is the provider_id every other table is placed by (distributed by id).
  providers: 'the providers: its id is the provider_id',
  // Authentication finds a token by its hash before it knows the provider: a lookup from credential to provider,
  // the classic reference table. Small, written rarely (issue, revoke).
  tokens: 'looked up by token_hash before the provider is known',
  // A marketplace reads every provider's listings; it belongs to none. Its id is the owner_id its own event stream
  // is placed by (distributed by id, as providers are).
  marketplaces: 'the marketplaces: its id is the owner_id of its stream',
  marketplace_tokens: 'a marketplace’s tokens, looked up by hash',
  // The service's own signing keys (discovery cursors), shared by every instance.
  service_keys: 'the service’s own keys',
  schema_migrations: 'the migrator’s own record',
  // A console request is authenticated by its cookie's hash (a sign-in link by its code's) before the provider is
  // known: the same lookup as tokens.
  console_sessions: 'looked up by the cookie’s hash before the provider is known',
  console_links: 'looked up by the link code’s hash before the provider is known',
}

/** The columns a table of one tenant's data is placed by, on a database sharded by tenant (docs/sharding.md). */
export type ShardColumn = 'provider_id' | 'owner_id' | 'marketplace_id'

/**
 * Tables of one tenant's data placed by another column than provider_id, each with its column and why. Every
 * other table that is not global is a provider's. A marketplace's own table goes here with `marketplace_id`.
 */
export const PLACED_BY: Readonly<Record<string, { column: Exclude<ShardColumn, 'provider_id'>; why: string }>> = {
  // An owner's event stream and its webhooks: a provider's or a marketplace's (src/events/owner.ts), placed by
  // the owner's id as a provider's data is by the provider's.
  events: { column: 'owner_id', why: 'an owner’s event stream' },
  webhook_endpoints: { column: 'owner_id', why: 'an owner’s webhook endpoints' },
  webhook_deliveries: { column: 'owner_id', why: 'what an owner’s endpoints are owed' },
  webhook_attempts: { column: 'owner_id', why: 'an owner’s delivery log' },
  // A marketplace names its reservations by its own referenceId and lists them newest first without knowing their
  // providers: its index of them sits with the marketplace. The reservations themselves are their provider's data.
  marketplace_reservations: { column: 'marketplace_id', why: 'a marketplace’s index of its own reservations' },
}

/**
 * What keeps a schema from being sharded by tenant, one line each: a table of one tenant's data (any table not in
 * GLOBAL_TABLES: a provider's, or one of PLACED_BY) without the column it is placed by, with a primary key or
 * unique key not led by it, or with a foreign key that leaves it out (rows referencing each other must sit
 * together); and an allow-list entry with no table. `placedBy` is PLACED_BY but for the schema of an earlier time.
 */
export function shardKeyViolations(tables: readonly TableKeys[], placedBy = PLACED_BY): string[] {
  const violations: string[] = []
  for (const [list, names] of [
    ['global', Object.keys(GLOBAL_TABLES)],
    ['placed by another column', Object.keys(placedBy)],
  ] as const) {
    for (const name of names) {
      if (!tables.some((table) => table.name === name)) violations.push(`${name}: listed as ${list}, but there is no such table`)
    }
  }
  for (const table of tables) {
    if (table.name in GLOBAL_TABLES) continue
    const column: ShardColumn = placedBy[table.name]?.column ?? 'provider_id'
    if (!table.columns.includes(column)) {
      violations.push(`${table.name}: no ${column} column`)
      continue
    }
    for (const key of table.uniques) {
      if (key.columns[0] !== column) violations.push(`${table.name}: key ${key.name} (${key.columns.join(', ')}) does not lead with ${column}`)
    }
    for (const key of table.foreignKeys) {
      if (!key.columns.includes(column))
        violations.push(`${table.name}: foreign key ${key.name} (${key.columns.join(', ')}) → ${key.references} leaves out ${column}`)
    }
  }
  return violations
}
