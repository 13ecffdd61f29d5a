import type { Principal } from '../providers/repository.js'

/**
 * Whose event stream and webhook endpoints: a provider's (its listings, the reservations on them) or a
 * marketplace's (its reservations). Ids of the two kinds never collide (`prv_…`, `mkt_…`), so the stream's rows
 * carry the id alone; the kind says which row holds the owner's event counter.
 */
export type Owner = { kind: 'provider' | 'marketplace'; id: string }

/** The table of each kind of owner: its row holds the owner's event_count, and is what an owner's writers lock. */
export const ownerTable = { provider: 'providers', marketplace: 'marketplaces' } as const satisfies Record<Owner['kind'], string>

export function ownerOf(principal: Principal): Owner {
  return principal.kind === 'provider' ? { kind: 'provider', id: principal.provider.id } : { kind: 'marketplace', id: principal.marketplace.id }
}

export const providerOwner = (providerId: string): Owner => ({ kind: 'provider', id: providerId })
