import type { Kysely } from 'kysely'

// Carries its own copy of the item JSON shape as it was on this date.

/**
 * listings.items_json: each listing's items as GET /api/v1/listing returns them, so a page reads no item rows.
 * listing_items stays the complete record. Nullable, and the reader falls back to listing_items where it is NULL:
 * an instance of the previous version may still be writing during a rolling deploy.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('listings').addColumn('items_json', 'text').execute()

  for (;;) {
    const listings = await db.selectFrom('listings').select('id').where('items_json', 'is', null).limit(500).execute()
    if (listings.length === 0) return
    const items = await db
      .selectFrom('listing_items')
      .select(['listing_id', 'name_ar', 'name_en', 'price_thousandths', 'quantity', 'category'])
      .where(
        'listing_id',
        'in',
        listings.map((listing) => listing.id),
      )
      .orderBy('listing_id')
      .orderBy('position')
      .execute()
    for (const { id } of listings) {
      const own = items
        .filter((item) => item.listing_id === id)
        .map((item) => ({
          nameAr: item.name_ar,
          nameEn: item.name_en,
          price: Number(item.price_thousandths) / 1000,
          quantity: Number(item.quantity),
          category: item.category,
        }))
      await db
        .updateTable('listings')
        .set({ items_json: JSON.stringify(own) })
        .where('id', '=', id)
        .execute()
    }
  }
}
