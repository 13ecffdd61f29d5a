import type { Kysely } from 'kysely'

// Frozen: written once for both dialects against Kysely<any>; later changes go in a new migration.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('providers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('industry', 'text', (c) => c.notNull())
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('listing_count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_created_ms', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_created_tick', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute()

  await db.schema
    .createTable('tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider_id', 'text', (c) => c.notNull().references('providers.id'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at_ms', 'bigint')
    .execute()
  await db.schema.createIndex('tokens_provider_id').on('tokens').column('provider_id').execute()

  await db.schema
    .createTable('listings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider_id', 'text', (c) => c.notNull().references('providers.id'))
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('reference_id', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('discount_rate', 'double precision', (c) => c.notNull())
    .addColumn('is_assigned_to_driver', 'integer', (c) => c.notNull())
    .addColumn('latitude', 'double precision', (c) => c.notNull())
    .addColumn('longitude', 'double precision', (c) => c.notNull())
    .addColumn('brand_name_ar', 'text', (c) => c.notNull())
    .addColumn('brand_name_en', 'text', (c) => c.notNull())
    .addColumn('brand_url_safe_name', 'text', (c) => c.notNull())
    .addColumn('brand_image_url', 'text', (c) => c.notNull())
    .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
    .addColumn('expires_at_unix', 'bigint', (c) => c.notNull())
    // referenceId is the provider's idempotency key: this constraint is what makes concurrent duplicates safe.
    .addUniqueConstraint('listings_provider_reference', ['provider_id', 'reference_id'])
    // Pages are ranges of seq: this index serves page 1 and page 10,000 at the same cost.
    .addUniqueConstraint('listings_provider_seq', ['provider_id', 'seq'])
    .execute()

  await db.schema
    .createTable('listing_items')
    .addColumn('listing_id', 'text', (c) => c.notNull().references('listings.id'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('name_ar', 'text', (c) => c.notNull())
    .addColumn('name_en', 'text', (c) => c.notNull())
    .addColumn('url_safe_name', 'text', (c) => c.notNull())
    .addColumn('image_url', 'text')
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('sub_category', 'text', (c) => c.notNull())
    .addColumn('price_thousandths', 'bigint', (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('listing_items_pk', ['listing_id', 'position'])
    .execute()
}
