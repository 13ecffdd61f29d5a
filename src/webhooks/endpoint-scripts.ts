import { execute, queryOne, type Script, type ScriptSql } from '../db/script.js'
import type { WebhookEndpointsTable } from '../db/tables.js'

/*
 * Changes of webhook endpoints as write scripts (db/script.ts), so they take their turn with every other write
 * (the SQLite writer thread; a transaction on PostgreSQL). Loaded by the writer thread: no Kysely.
 */

export type EndpointRow = WebhookEndpointsTable

export const ENDPOINT_COLUMNS =
  'id, provider_id, url, event_mask, status, disabled_reason, created_at_ms, secret, previous_secret, previous_secret_until_ms, failing_since_ms'

/** docs/api.md#webhooks: a provider has at most this many endpoints. */
export const MAX_ENDPOINTS_PER_PROVIDER = 10

export interface NewEndpoint {
  providerId: string
  id: string
  url: string
  eventMask: number
  secret: string
  nowMs: number
}

export function* createEndpoint(d: ScriptSql, args: NewEndpoint): Script<EndpointRow | 'limit'> {
  // The provider's row, locked: two creates at once cannot both see nine endpoints and make eleven.
  yield* queryOne(`select id from providers where id = ?${d.forUpdate}`, [args.providerId])
  const counted = yield* queryOne<{ n: number }>('select count(*) as n from webhook_endpoints where provider_id = ?', [args.providerId])
  if (Number(counted?.n ?? 0) >= MAX_ENDPOINTS_PER_PROVIDER) return 'limit'
  return (yield* queryOne<EndpointRow>(
    `insert into webhook_endpoints (id, provider_id, url, event_mask, status, created_at_ms, secret)
     values (?, ?, ?, ?, 'enabled', ?, ?) returning ${ENDPOINT_COLUMNS}`,
    [args.id, args.providerId, args.url, args.eventMask, args.nowMs, args.secret],
  )) as EndpointRow
}

interface Owned {
  providerId: string
  endpointId: string
}

/** Removes the endpoint with what it is still owed and its log: no attempt starts for it afterwards. */
export function* deleteEndpoint(_d: ScriptSql, { providerId, endpointId }: Owned): Script<boolean> {
  const gone = yield* queryOne('delete from webhook_endpoints where id = ? and provider_id = ? returning id', [endpointId, providerId])
  if (!gone) return false
  yield* execute('delete from webhook_deliveries where endpoint_id = ?', [endpointId])
  yield* execute('delete from webhook_attempts where endpoint_id = ?', [endpointId])
  return true
}

/** A new secret; the one it replaces keeps signing until `previousUntilMs` (docs/api.md#webhooks: 24 h). */
export function* rotateSecret(
  _d: ScriptSql,
  { providerId, endpointId, secret, previousUntilMs }: Owned & { secret: string; previousUntilMs: number },
): Script<EndpointRow | undefined> {
  // Every right-hand side reads the row as it was: the previous secret is the one being replaced.
  return yield* queryOne<EndpointRow>(
    `update webhook_endpoints set previous_secret = secret, previous_secret_until_ms = ?, secret = ?
     where id = ? and provider_id = ? returning ${ENDPOINT_COLUMNS}`,
    [previousUntilMs, secret, endpointId, providerId],
  )
}

/** Enabled again, with a clean record: its deliveries still owed are attempted when due. */
export function* enableEndpoint(_d: ScriptSql, { providerId, endpointId }: Owned): Script<EndpointRow | undefined> {
  return yield* queryOne<EndpointRow>(
    `update webhook_endpoints set status = 'enabled', disabled_reason = null, failing_since_ms = null
     where id = ? and provider_id = ? returning ${ENDPOINT_COLUMNS}`,
    [endpointId, providerId],
  )
}
