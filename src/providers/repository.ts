import { sql, type Kysely } from 'kysely'
import type { Database, Tx } from '../db/connection.js'
import type { Tables } from '../db/tables.js'
import { prefixedId } from '../ids.js'
import type { Marketplace } from './marketplaces.js'
import { generateToken } from './tokens.js'

export interface Provider {
  id: string
  name: string
  industry: string
}

/** Who a valid token belongs to: a provider (listing routes) or a marketplace (discovery). */
export type Principal = { kind: 'provider'; provider: Provider } | { kind: 'marketplace'; marketplace: Marketplace }

export interface ProviderSummary extends Provider {
  createdAt: string
}

export interface IssuedToken {
  id: string
  token: string
}

const DEFAULT_INDUSTRY = 'restaurant'

/** Issues a provider's or a marketplace's token through `db` (the pool or a transaction); the plain token is returned once, never stored. */
export async function insertToken(db: Kysely<Tables>, table: 'tokens' | 'marketplace_tokens', ownerId: string, nowMs: number): Promise<IssuedToken> {
  const { token, hash } = generateToken()
  const id = prefixedId('tok', nowMs)
  const owner = table === 'tokens' ? { provider_id: ownerId } : { marketplace_id: ownerId }
  const row = { id, ...owner, token_hash: hash, created_at_ms: nowMs, revoked_at_ms: null }
  await db.insertInto(table).values(row).execute()
  return { id, token }
}

export class ProviderRepository {
  constructor(private readonly database: Database) {}

  /** A provider with its first token, in one transaction. */
  async create(input: { name: string; industry?: string }, nowMs: number): Promise<Provider & { token: IssuedToken }> {
    const provider = { id: prefixedId('prv', nowMs), name: input.name, industry: input.industry ?? DEFAULT_INDUSTRY }
    const token = await this.database.transact(insertProvider, provider, nowMs)
    return { ...provider, token }
  }

  /**
   * Creates provider `demo` with a token when there is no provider at all, as one statement, so two
   * instances starting together cannot both do it. Returns the token only to the one that created it.
   */
  createDemoIfNone(nowMs: number): Promise<IssuedToken | undefined> {
    return this.database.transact(insertDemoIfNone, nowMs)
  }

  async list(): Promise<ProviderSummary[]> {
    const rows = await this.database.kysely
      .selectFrom('providers')
      .select(['id', 'name', 'industry', 'created_at_ms'])
      .orderBy('created_at_ms')
      .orderBy('id')
      .execute()
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      industry: row.industry,
      createdAt: new Date(row.created_at_ms).toISOString(),
    }))
  }

  async exists(providerId: string): Promise<boolean> {
    const row = await this.database.kysely.selectFrom('providers').select('id').where('id', '=', providerId).executeTakeFirst()
    return row !== undefined
  }

  async createToken(providerId: string, nowMs: number): Promise<IssuedToken & { providerId: string }> {
    const { id, token } = await insertToken(this.database.writer, 'tokens', providerId, nowMs)
    return { id, providerId, token }
  }

  /** Revokes a provider's or a marketplace's token; false when none has this id. Revoking twice is not an error. */
  async revokeToken(tokenId: string, nowMs: number): Promise<boolean> {
    for (const table of ['tokens', 'marketplace_tokens'] as const) {
      const result = await this.database.writer
        .updateTable(table)
        .set((eb) => ({ revoked_at_ms: eb.fn.coalesce('revoked_at_ms', eb.val(nowMs)) }))
        .where('id', '=', tokenId)
        .executeTakeFirst()
      if (Number(result.numUpdatedRows) > 0) return true
    }
    return false
  }

  /** One statement, two unique-index lookups, whichever kind the token is. */
  async findPrincipalByTokenHash(tokenHash: string): Promise<Principal | undefined> {
    const { rows } = await sql<{ kind: 'provider' | 'marketplace'; id: string; name: string; industry: string | null }>`
      select 'provider' as kind, p.id, p.name, p.industry
        from tokens t join providers p on p.id = t.provider_id
        where t.token_hash = ${tokenHash} and t.revoked_at_ms is null
      union all
      select 'marketplace' as kind, m.id, m.name, null as industry
        from marketplace_tokens t join marketplaces m on m.id = t.marketplace_id
        where t.token_hash = ${tokenHash} and t.revoked_at_ms is null`.execute(this.database.kysely)
    const row = rows[0]
    if (!row) return undefined
    return row.kind === 'provider'
      ? { kind: 'provider', provider: { id: row.id, name: row.name, industry: row.industry as string } }
      : { kind: 'marketplace', marketplace: { id: row.id, name: row.name } }
  }
}

/** A write transaction (database.transact): a provider with its first token. */
export async function insertProvider(tx: Tx, provider: Provider, nowMs: number): Promise<IssuedToken> {
  await tx.insertInto('providers').values({ id: provider.id, name: provider.name, industry: provider.industry, created_at_ms: nowMs }).execute()
  return insertToken(tx, 'tokens', provider.id, nowMs)
}

/** A write transaction (database.transact): provider `demo` and its token, when there is no provider at all. */
export async function insertDemoIfNone(tx: Tx, nowMs: number): Promise<IssuedToken | undefined> {
  const id = prefixedId('prv', nowMs)
  const inserted = await tx
    .insertInto('providers')
    .columns(['id', 'name', 'industry', 'created_at_ms'])
    .expression(
      tx
        .selectNoFrom((eb) => [eb.val(id).as('id'), eb.val('demo').as('name'), eb.val(DEFAULT_INDUSTRY).as('industry'), eb.val(nowMs).as('created_at_ms')])
        .where((eb) => eb.not(eb.exists(eb.selectFrom('providers').select('id')))),
    )
    .executeTakeFirst()
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0) === 0) return undefined
  return insertToken(tx, 'tokens', id, nowMs)
}
