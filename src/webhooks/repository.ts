import { sql, type Kysely } from 'kysely'
import type { Database, Tx } from '../db/connection.js'
import type { Transact } from '../db/write-transaction.js'
import { onPostgres } from '../db/dialect.js'
import { PreparedQuery } from '../db/prepared-query.js'
import type { Tables, WebhookAttemptsTable, WebhookEndpointsTable } from '../db/tables.js'
import { ownerTable, type Owner } from '../events/owner.js'
import type { EventType } from '../events/types.js'
import { typesOf } from './event-mask.js'
import type { DeliveryAttempt, WebhookEndpoint } from './schemas.js'

export type EndpointRow = WebhookEndpointsTable

const ENDPOINT_COLUMNS = [
  'id',
  'owner_id',
  'url',
  'event_mask',
  'status',
  'disabled_reason',
  'created_at_ms',
  'secret',
  'previous_secret',
  'previous_secret_until_ms',
  'failing_since_ms',
] as const satisfies ReadonlyArray<keyof EndpointRow>

export const MAX_ENDPOINTS_PER_OWNER = 10

export interface NewEndpoint {
  owner: Owner
  id: string
  url: string
  eventMask: number
  secret: string
  nowMs: number
}

/** An endpoint named by its owner's id (a provider's or a marketplace's) and its own. */
interface Owned {
  ownerId: string
  endpointId: string
}

const iso = (ms: number) => new Date(ms).toISOString()

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

/** A line of the delivery log: an attempt made, or the next attempt of a delivery still owed (`pending`). */
type LogRow = Omit<WebhookAttemptsTable, 'owner_id' | 'endpoint_id' | 'outcome' | 'duration_ms'> & {
  outcome: WebhookAttemptsTable['outcome'] | 'pending'
  duration_ms: number | null
}

export class WebhookRepository {
  readonly #db: Kysely<Tables>
  readonly #transact: Transact
  readonly #list: PreparedQuery<{ ownerId: string }, EndpointRow>
  readonly #one: PreparedQuery<{ ownerId: string; id: string }, EndpointRow>
  readonly #log: PreparedQuery<{ ownerId: string; endpointId: string; limit: number }, LogRow>

  constructor(database: Database) {
    this.#db = database.writer
    this.#transact = database.transact
    const columns = ENDPOINT_COLUMNS
    this.#list = new PreparedQuery(database.kysely, (db, param) =>
      db.selectFrom('webhook_endpoints').select(columns).where('owner_id', '=', param('ownerId')).orderBy('created_at_ms').orderBy('id'),
    )
    this.#one = new PreparedQuery(database.kysely, (db, param) =>
      db.selectFrom('webhook_endpoints').select(columns).where('id', '=', param('id')).where('owner_id', '=', param('ownerId')),
    )
    // One statement, one snapshot: an attempt and its rescheduled delivery commit together, so the log shows both or neither.
    this.#log = new PreparedQuery(database.kysely, (db, param) => {
      const pending = db
        .selectFrom('webhook_deliveries')
        .select((eb) => [
          'event_id',
          'event_type',
          eb('attempts', '+', sql.lit(1)).as('attempt'),
          sql<LogRow['outcome']>`'pending'`.as('outcome'),
          sql<number | null>`cast(null as integer)`.as('response_status'),
          sql<number | null>`cast(null as integer)`.as('duration_ms'),
          'next_attempt_at_ms as at_ms',
          sql<string | null>`cast(null as text)`.as('error'),
        ])
        .where('owner_id', '=', param('ownerId'))
        .where('endpoint_id', '=', param('endpointId'))
        .orderBy('next_attempt_at_ms', 'desc')
        .limit(param('limit'))
      const made = db
        .selectFrom('webhook_attempts')
        .select(['event_id', 'event_type', 'attempt', 'outcome', 'response_status', 'duration_ms', 'at_ms', 'error'])
        .where('owner_id', '=', param('ownerId'))
        .where('endpoint_id', '=', param('endpointId'))
        .orderBy('at_ms', 'desc')
        .limit(param('limit'))
      return db
        .selectFrom(pending.as('p'))
        .selectAll()
        .unionAll(db.selectFrom(made.as('a')).selectAll())
    })
  }

  list(ownerId: string): Promise<EndpointRow[]> {
    return this.#list.execute({ ownerId })
  }

  async find(ownerId: string, id: string): Promise<EndpointRow | undefined> {
    return (await this.#one.execute({ ownerId, id }))[0]
  }

  /** A new endpoint, or 'limit' when the owner already has MAX_ENDPOINTS_PER_OWNER. */
  create(args: NewEndpoint): Promise<EndpointRow | 'limit'> {
    return this.#transact(insertEndpoint, args)
  }

  /** Removes the endpoint with what it is still owed and its log: no attempt starts for it afterwards. */
  delete(owned: Owned): Promise<boolean> {
    return this.#transact(deleteEndpoint, owned)
  }

  /** The secret it replaces keeps signing until `previousUntilMs`. */
  rotateSecret({ ownerId, endpointId, secret, previousUntilMs }: Owned & { secret: string; previousUntilMs: number }): Promise<EndpointRow | undefined> {
    // Every right-hand side reads the row as it was: the previous secret is the one being replaced.
    return this.#db
      .updateTable('webhook_endpoints')
      .set((eb) => ({ previous_secret: eb.ref('secret'), previous_secret_until_ms: previousUntilMs, secret }))
      .where('id', '=', endpointId)
      .where('owner_id', '=', ownerId)
      .returning(ENDPOINT_COLUMNS)
      .executeTakeFirst()
  }

  /** Enabled again, with a clean record: its deliveries still owed are attempted when due. */
  enable({ ownerId, endpointId }: Owned): Promise<EndpointRow | undefined> {
    return this.#db
      .updateTable('webhook_endpoints')
      .set({ status: 'enabled', disabled_reason: null, failing_since_ms: null })
      .where('id', '=', endpointId)
      .where('owner_id', '=', ownerId)
      .returning(ENDPOINT_COLUMNS)
      .executeTakeFirst()
  }

  /** Newest first. */
  async deliveries({ ownerId, endpointId }: Owned, limit: number): Promise<DeliveryAttempt[]> {
    const rows = await this.#log.execute({ ownerId, endpointId, limit })
    const entries: Array<DeliveryAttempt & { atMs: number }> = rows.map((row) => ({
      eventId: row.event_id,
      type: row.event_type as EventType,
      attempt: row.attempt,
      outcome: row.outcome,
      responseStatus: row.response_status,
      durationMs: row.duration_ms,
      at: iso(row.at_ms),
      error: row.error,
      atMs: row.at_ms,
    }))
    entries.sort((a, b) => b.atMs - a.atMs)
    return entries.slice(0, limit).map(({ atMs: _, ...entry }) => entry)
  }
}

/** A write transaction (database.transact): a new endpoint, unless the owner has MAX_ENDPOINTS_PER_OWNER. */
export async function insertEndpoint(tx: Tx, args: NewEndpoint): Promise<EndpointRow | 'limit'> {
  // The owner's row (its provider's or marketplace's), locked: two creates at once cannot both pass the limit.
  await tx
    .selectFrom(ownerTable[args.owner.kind])
    .select('id')
    .where('id', '=', args.owner.id)
    .$if(onPostgres(tx), (qb) => qb.forUpdate())
    .execute()
  const counted = await tx
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('owner_id', '=', args.owner.id)
    .executeTakeFirstOrThrow()
  if (Number(counted.n) >= MAX_ENDPOINTS_PER_OWNER) return 'limit'
  return tx
    .insertInto('webhook_endpoints')
    .values({
      id: args.id,
      owner_id: args.owner.id,
      url: args.url,
      event_mask: args.eventMask,
      status: 'enabled',
      created_at_ms: args.nowMs,
      secret: args.secret,
      disabled_reason: null,
      previous_secret: null,
      previous_secret_until_ms: null,
      failing_since_ms: null,
    })
    .returning(ENDPOINT_COLUMNS)
    .executeTakeFirstOrThrow()
}

/** A write transaction (database.transact): the endpoint with what it is still owed and its log. */
export async function deleteEndpoint(tx: Tx, { ownerId, endpointId }: Owned): Promise<boolean> {
  const gone = await tx.deleteFrom('webhook_endpoints').where('id', '=', endpointId).where('owner_id', '=', ownerId).returning('id').executeTakeFirst()
  if (!gone) return false
  await tx.deleteFrom('webhook_deliveries').where('owner_id', '=', ownerId).where('endpoint_id', '=', endpointId).execute()
  await tx.deleteFrom('webhook_attempts').where('owner_id', '=', ownerId).where('endpoint_id', '=', endpointId).execute()
  return true
}
