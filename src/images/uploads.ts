import type { Kysely, Selectable } from 'kysely'
import { byProvider } from '../by-provider.js'
import type { Database } from '../db/connection.js'
import { onPostgres } from '../db/dialect.js'
import type { ImagesTable, Tables } from '../db/tables.js'
import type { ImageStore } from './image-store.js'
import type { ImageFormat } from './sniff.js'

export type UploadRow = Selectable<ImagesTable>

const EXTENSIONS: Record<ImageFormat, string> = { jpeg: 'jpg', png: 'png', webp: 'webp', gif: 'gif' }

/** How an image's file is named, in the store and in its url. */
export const imageFileName = (image: { id: string; format: ImageFormat }) => `${image.id}.${EXTENSIONS[image.format]}`

/** `img_` and 24 base64url characters (144 random bits), then the format's extension; anything else names no image. */
const IMAGE_FILE = /^(img_[A-Za-z0-9_-]{24})\.(jpg|png|webp|gif)$/

/** The id and format a file name gives, or undefined when it cannot name an image. */
export function parseImageFileName(file: string): { id: string; format: ImageFormat } | undefined {
  const match = IMAGE_FILE.exec(file)
  if (!match) return undefined
  const format = (Object.keys(EXTENSIONS) as ImageFormat[]).find((name) => EXTENSIONS[name] === match[2]) as ImageFormat
  return { id: match[1] as string, format }
}

/** The uploads table: reads on the request connection, writes on the writer. */
export class Uploads {
  constructor(private readonly database: Database) {}

  /** The provider's image of these uploaded bytes, its last use moved to now (so it is kept as long as a new one). */
  async reuse(providerId: string, uploadHash: string, nowMs: number): Promise<UploadRow | undefined> {
    return this.database.writer
      .updateTable('images')
      .set({ last_used_ms: nowMs })
      .where('provider_id', '=', providerId)
      .where('upload_hash', '=', uploadHash)
      .returningAll()
      .executeTakeFirst()
  }

  /** Rejects with the database's unique violation when the provider has these bytes already (a concurrent upload). */
  async insert(row: UploadRow): Promise<void> {
    await this.database.writer.insertInto('images').values(row).execute()
  }

  /** Which of `ids` the provider has, with whether a listing names them already. */
  async find(providerId: string, ids: readonly string[]): Promise<Array<Pick<UploadRow, 'id' | 'format' | 'listed_at_ms'>>> {
    return this.database.kysely
      .selectFrom('images')
      .select(['id', 'format', 'listed_at_ms'])
      .where('provider_id', '=', providerId)
      .where('id', 'in', ids)
      .execute()
  }

  /** Marks the images a listing names as kept; returns those that still exist (one removed meanwhile is not). */
  async markListed(providerId: string, ids: readonly string[], nowMs: number): Promise<string[]> {
    const rows = await this.database.writer
      .updateTable('images')
      .set((eb) => ({ listed_at_ms: eb.fn.coalesce('listed_at_ms', eb.val(nowMs)) }))
      .where('provider_id', '=', providerId)
      .where('id', 'in', ids)
      .returning('id')
      .execute()
    return rows.map((row) => row.id)
  }
}

/** Images one removal pass takes at most. */
export const REMOVAL_BATCH = 500

/**
 * Removes up to `limit` images that no listing names and that were last uploaded before `beforeMs`; returns how
 * many. Found by a read that locks nothing, then provider by provider each is taken again locked (SKIP LOCKED on
 * PostgreSQL, so instances removing at once take different rows) and only if still unused: a create that marked it
 * meanwhile keeps it. Its file goes after the row's removal is committed: a crash in between leaves a file no row
 * names, never a row without its file.
 */
export async function removeUnusedImages(db: Kysely<Tables>, store: ImageStore, { beforeMs, limit }: { beforeMs: number; limit: number }): Promise<number> {
  const due = await db
    .selectFrom('images')
    .select(['provider_id', 'id'])
    .where('listed_at_ms', 'is', null)
    .where('last_used_ms', '<', beforeMs)
    .orderBy('last_used_ms')
    .limit(limit)
    .execute()
  let removed = 0
  for (const [providerId, rows] of byProvider(due, 'provider_id')) {
    const taken = await db.transaction().execute(async (tx) => {
      const unused = await tx
        .selectFrom('images')
        .select(['id', 'format'])
        .where('provider_id', '=', providerId)
        .where(
          'id',
          'in',
          rows.map((row) => row.id),
        )
        .where('listed_at_ms', 'is', null)
        .where('last_used_ms', '<', beforeMs)
        .$if(onPostgres(tx), (qb) => qb.forUpdate().skipLocked())
        .execute()
      if (unused.length > 0) {
        await tx
          .deleteFrom('images')
          .where('provider_id', '=', providerId)
          .where(
            'id',
            'in',
            unused.map((row) => row.id),
          )
          .execute()
      }
      return unused
    })
    for (const image of taken) await store.delete(imageFileName(image))
    removed += taken.length
  }
  return removed
}
