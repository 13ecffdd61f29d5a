import type { Kysely } from 'kysely'

/**
 * The provider console's sessions and one-time sign-in links. Both are kept in the database, not in a process's
 * memory, so every instance sees a sign-out or a spent link at once.
 *
 * console_sessions: one row per signed-in browser, found by the SHA-256 of the cookie's value (the value itself
 * is never stored). token_id is the token the session was opened with (a revoked token ends it); null for a
 * session opened by a sign-in link, which names a provider and no token. last_seen_ms bounds its idle time.
 *
 * console_links: sign-in links printed by `listing-service console-link`, by the SHA-256 of their code; used_at_ms
 * is set by the one use that spends it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('console_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('provider_id', 'text', (c) => c.notNull())
    .addColumn('token_id', 'text')
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_ms', 'bigint', (c) => c.notNull())
    .execute()
  // Sessions idle too long are removed by age.
  await db.schema.createIndex('console_sessions_last_seen').on('console_sessions').column('last_seen_ms').execute()

  await db.schema
    .createTable('console_links')
    .addColumn('code_hash', 'text', (c) => c.primaryKey())
    .addColumn('provider_id', 'text', (c) => c.notNull())
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('expires_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('used_at_ms', 'bigint')
    .execute()
  await db.schema.createIndex('console_links_expires').on('console_links').column('expires_at_ms').execute()
}
