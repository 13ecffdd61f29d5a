import type { Database, Tx } from '../db/connection.js'
import { prefixedId } from '../ids.js'
import { insertToken, type IssuedToken } from './repository.js'

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
    const { id: tokenId, token } = await this.database.transact(insertMarketplace, marketplace, nowMs)
    return { ...marketplace, tokenId, token }
  }
}

/** A write transaction (database.transact): a marketplace with its first token. */
export async function insertMarketplace(tx: Tx, marketplace: Marketplace, nowMs: number): Promise<IssuedToken> {
  await tx.insertInto('marketplaces').values({ id: marketplace.id, name: marketplace.name, created_at_ms: nowMs }).execute()
  return insertToken(tx, 'marketplace_tokens', marketplace.id, nowMs)
}
