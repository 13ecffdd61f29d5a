import type { Database } from '../db/connection.js'
import { prefixedId } from '../ids.js'
import { generateToken } from './tokens.js'

/** The second kind of client, which reads every provider's listings by place. */
export interface Marketplace {
  id: string
  name: string
}

export class MarketplaceRepository {
  constructor(private readonly database: Database) {}

  /** A marketplace with its first token, in one transaction; the plain token is returned once, never stored. */
  async create(name: string, nowMs: number): Promise<Marketplace & { tokenId: string; token: string }> {
    const marketplace = { id: prefixedId('mkt', nowMs), name }
    const { token, hash } = generateToken()
    const tokenId = prefixedId('tok', nowMs)
    await this.database.writer.transaction().execute(async (trx) => {
      await trx
        .insertInto('marketplaces')
        .values({ ...marketplace, created_at_ms: nowMs })
        .execute()
      await trx
        .insertInto('marketplace_tokens')
        .values({ id: tokenId, marketplace_id: marketplace.id, token_hash: hash, created_at_ms: nowMs, revoked_at_ms: null })
        .execute()
    })
    return { ...marketplace, tokenId, token }
  }
}
