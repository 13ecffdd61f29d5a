import type { Database } from '../db/connection.js'
import { prefixedId } from '../ids.js'
import { insertToken } from './repository.js'

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
    const { id: tokenId, token } = await this.database.writer.transaction().execute(async (trx) => {
      await trx.insertInto('marketplaces').values({ id: marketplace.id, name, created_at_ms: nowMs }).execute()
      return insertToken(trx, 'marketplace_tokens', marketplace.id, nowMs)
    })
    return { ...marketplace, tokenId, token }
  }
}
