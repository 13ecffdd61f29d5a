import type { Database } from '../db/connection.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from '../db/tables.js'
import type { EventType } from '../events/types.js'
import { ENDPOINT_COLUMNS, type EndpointRow } from './endpoint-scripts.js'
import { typesOf } from './event-mask.js'
import type { DeliveryAttempt, WebhookEndpoint } from './schemas.js'

const iso = (ms: number) => new Date(Number(ms)).toISOString()

/** An endpoint as the API shows it: never its secret. */
export function endpointView(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    events: typesOf(row.event_mask),
    status: row.status,
    disabledReason: row.disabled_reason,
    createdAt: iso(row.created_at_ms),
  }
}

type PendingRow = Pick<WebhookDeliveriesTable, 'event_id' | 'event_type' | 'attempts' | 'next_attempt_at_ms'>
type AttemptRow = Omit<WebhookAttemptsTable, 'endpoint_id'>

/** Reads of webhook endpoints and their delivery log; their changes are write scripts (endpoint-scripts.ts). */
export class WebhookRepository {
  readonly #list: PreparedQuery<{ providerId: string }, EndpointRow>
  readonly #one: PreparedQuery<{ providerId: string; id: string }, EndpointRow>
  readonly #pending: PreparedQuery<{ endpointId: string; limit: number }, PendingRow>
  readonly #attempts: PreparedQuery<{ endpointId: string; limit: number }, AttemptRow>

  constructor(database: Database) {
    const columns = ENDPOINT_COLUMNS.split(', ') as Array<keyof EndpointRow>
    this.#list = new PreparedQuery(database.kysely, (db, param) =>
      db.selectFrom('webhook_endpoints').select(columns).where('provider_id', '=', param('providerId')).orderBy('created_at_ms').orderBy('id'),
    )
    this.#one = new PreparedQuery(database.kysely, (db, param) =>
      db.selectFrom('webhook_endpoints').select(columns).where('id', '=', param('id')).where('provider_id', '=', param('providerId')),
    )
    this.#pending = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('webhook_deliveries')
        .select(['event_id', 'event_type', 'attempts', 'next_attempt_at_ms'])
        .where('endpoint_id', '=', param('endpointId'))
        .orderBy('next_attempt_at_ms', 'desc')
        .limit(param('limit')),
    )
    this.#attempts = new PreparedQuery(database.kysely, (db, param) =>
      db
        .selectFrom('webhook_attempts')
        .select(['event_id', 'event_type', 'attempt', 'outcome', 'response_status', 'duration_ms', 'at_ms', 'error'])
        .where('endpoint_id', '=', param('endpointId'))
        .orderBy('at_ms', 'desc')
        .limit(param('limit')),
    )
  }

  list(providerId: string): Promise<EndpointRow[]> {
    return this.#list.execute({ providerId })
  }

  async find(providerId: string, id: string): Promise<EndpointRow | undefined> {
    return (await this.#one.execute({ providerId, id }))[0]
  }

  /** The endpoint's log, newest first: attempts made, and the next attempt of each delivery still owed. */
  async deliveries(endpointId: string, limit: number): Promise<DeliveryAttempt[]> {
    const [pending, made] = await Promise.all([this.#pending.execute({ endpointId, limit }), this.#attempts.execute({ endpointId, limit })])
    const entries: Array<DeliveryAttempt & { atMs: number }> = [
      ...pending.map((row) => ({
        eventId: row.event_id,
        type: row.event_type as EventType,
        attempt: Number(row.attempts) + 1,
        outcome: 'pending' as const,
        responseStatus: null,
        durationMs: null,
        at: iso(row.next_attempt_at_ms),
        error: null,
        atMs: Number(row.next_attempt_at_ms),
      })),
      ...made.map((row) => ({
        eventId: row.event_id,
        type: row.event_type as EventType,
        attempt: Number(row.attempt),
        outcome: row.outcome,
        responseStatus: row.response_status === null ? null : Number(row.response_status),
        durationMs: Number(row.duration_ms),
        at: iso(row.at_ms),
        error: row.error,
        atMs: Number(row.at_ms),
      })),
    ]
    entries.sort((a, b) => b.atMs - a.atMs)
    return entries.slice(0, limit).map(({ atMs: _, ...entry }) => entry)
  }
}
