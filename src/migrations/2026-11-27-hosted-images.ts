import { sql, type Kysely } from 'kysely'

/**
 * Images uploaded by providers. Keyed by provider first, as all provider data (ready to shard by provider). An
 * upload's bytes are found again by (provider_id, upload_hash); the unused ones are found by age through a partial
 * index of those no listing names, which stays small as listed images leave it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('images')
    .addColumn('provider_id', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('upload_hash', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('bytes', 'bigint', (c) => c.notNull())
    .addColumn('width', 'integer', (c) => c.notNull())
    .addColumn('height', 'integer', (c) => c.notNull())
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('last_used_ms', 'bigint', (c) => c.notNull())
    .addColumn('listed_at_ms', 'bigint')
    .addPrimaryKeyConstraint('images_pkey', ['provider_id', 'id'])
    .addUniqueConstraint('images_provider_upload', ['provider_id', 'upload_hash'])
    .execute()
  await db.schema.createIndex('images_unused').on('images').column('last_used_ms').where(sql.ref('listed_at_ms'), 'is', null).execute()
}
