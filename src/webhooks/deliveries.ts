import { type Kysely, type UpdateQueryBuilder, type UpdateResult } from 'kysely'
import { byProvider } from '../by-provider.js'
import type { JobDatabase, Tx } from '../db/connection.js'
import { onPostgres } from '../db/dialect.js'
import type { Tables } from '../db/tables.js'
import type { EventRow } from '../events/feed.js'

export interface ClaimArgs {
  nowMs: number
  limit: number
  /** Another instance may take a delivery again only after this (an attempt cut off by a crash). */
  leaseUntilMs: number
  /** Attempts in flight per endpoint in this process at most, `running` included; one while it is failing. */
  perEndpoint: number
  /** Attempts in flight, by endpoint id. */
  running: Record<string, number>
  /** Endpoints that failed a moment ago in this process. */
  resting: string[]
}

interface DeliveryTarget {
  owner_id: string
  endpoint_id: string
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_until_ms: number | null
  /** The provider's, for its listing events; null for a marketplace's endpoint. */
  industry: string | null
}

export interface ClaimedDelivery extends EventRow, DeliveryTarget {
  delivery_id: string
  /** Attempts made before this one. */
  attempts: number
  /** A claim's deliveries come in this order. */
  next_attempt_at_ms: number
}

export interface Claim {
  deliveries: ClaimedDelivery[]
  /** Whether more was due than was claimed. */
  more: boolean
}

interface DueEndpoint {
  target: DeliveryTarget
  failing_since_ms: number | null
}

/**
 * Leases due deliveries of enabled endpoints. Endpoints at their share in this process, or resting, are passed over
 * in SQL, so one slow receiver with a long queue cannot starve the others; a failing endpoint gets one attempt at a
 * time, so a receiver that is down is probed, not flooded. Endpoints are found by a read that locks nothing, then
 * each is leased on its owner's rows alone.
 */
export async function claimDeliveries(db: Kysely<Tables>, args: ClaimArgs): Promise<Claim> {
  const deliveries: ClaimedDelivery[] = []
  let more = false
  for (const endpoint of await dueEndpoints(db, args)) {
    if (deliveries.length === args.limit) {
      more = true
      break
    }
    const { target } = endpoint
    const cap = endpoint.failing_since_ms === null ? args.perEndpoint : 1
    const room = Math.min(args.limit - deliveries.length, cap - (args.running[target.endpoint_id] ?? 0))
    if (room <= 0) continue
    const leased = await leaseDue(db, target, room, args)
    // A full share may leave more behind; the endpoint's attempts ending will call the next claim.
    if (leased.length === room) more = true
    if (leased.length === 0) continue
    const events = await db
      .selectFrom('events')
      .select(['id', 'seq', 'type', 'created_at_ms', 'snapshot'])
      .where('owner_id', '=', target.owner_id)
      .where(
        'id',
        'in',
        leased.map((delivery) => delivery.event_id),
      )
      .execute()
    const eventById = new Map(events.map((event) => [event.id, event]))
    for (const { id, event_id, attempts, next_attempt_at_ms } of leased) {
      const event = eventById.get(event_id)
      // Deliveries of an event are removed with it (retention), so a leased delivery's event is there.
      if (event) deliveries.push({ ...event, ...target, delivery_id: id, attempts, next_attempt_at_ms })
    }
  }
  deliveries.sort((a, b) => a.next_attempt_at_ms - b.next_attempt_at_ms)
  return { deliveries, more }
}

/**
 * The one due longest first, one index probe each (webhook_deliveries_endpoint): reading deliveries in due order
 * instead would step over every delivery owed to an endpoint passed over.
 */
async function dueEndpoints(db: Kysely<Tables>, args: ClaimArgs): Promise<DueEndpoint[]> {
  const passedOver = [
    ...Object.entries(args.running)
      .filter(([, n]) => n >= args.perEndpoint)
      .map(([id]) => id),
    ...args.resting,
  ]
  const rows = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('webhook_endpoints as w')
        // A marketplace's endpoint has no provider, and its events no listing to show: no industry.
        .leftJoin('providers as p', 'p.id', 'w.owner_id')
        .select([
          'w.owner_id',
          'w.id as endpoint_id',
          'w.url',
          'w.secret',
          'w.previous_secret',
          'w.previous_secret_until_ms',
          'w.failing_since_ms',
          'p.industry',
        ])
        .select((eb) =>
          eb
            .selectFrom('webhook_deliveries as x')
            .select((eb) => eb.fn.min('x.next_attempt_at_ms').as('due'))
            .whereRef('x.owner_id', '=', 'w.owner_id')
            .whereRef('x.endpoint_id', '=', 'w.id')
            .where('x.next_attempt_at_ms', '<=', args.nowMs)
            .as('due_since'),
        )
        .where('w.status', '=', 'enabled')
        .$if(passedOver.length > 0, (qb) => qb.where('w.id', 'not in', passedOver))
        .as('e'),
    )
    .selectAll()
    .where('due_since', 'is not', null)
    .orderBy('due_since')
    .orderBy('owner_id')
    .orderBy('endpoint_id')
    .execute()
  return rows.map(({ failing_since_ms, due_since: _, ...target }) => ({ target, failing_since_ms }))
}

/**
 * One statement, so it follows webhook_deliveries_endpoint whatever the planner knows of the table (naming the
 * deliveries by id is planned as a full scan without statistics). On PostgreSQL rows another claim holds are skipped.
 */
function leaseDue(db: Kysely<Tables>, endpoint: DeliveryTarget, room: number, args: ClaimArgs) {
  return db
    .updateTable('webhook_deliveries')
    .set({ lease_until_ms: args.leaseUntilMs })
    .where('owner_id', '=', endpoint.owner_id)
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('owner_id', '=', endpoint.owner_id)
        .where('endpoint_id', '=', endpoint.endpoint_id)
        .where('next_attempt_at_ms', '<=', args.nowMs)
        .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<=', args.nowMs)]))
        .orderBy('next_attempt_at_ms')
        .limit(room)
        .$if(onPostgres(db), (qb) => qb.forUpdate().skipLocked()),
    )
    .returning(['id', 'event_id', 'attempts', 'next_attempt_at_ms'])
    .execute()
}

export interface AttemptRecord {
  deliveryId: string
  ownerId: string
  endpointId: string
  eventId: string
  type: string
  /** This attempt's number, from 1. */
  attempt: number
  succeeded: boolean
  responseStatus: number | null
  durationMs: number
  atMs: number
  error: string | null
  /** When to try again; null when the delivery is done (succeeded, or failed for good). */
  retryAtMs: number | null
  /** The receiver answered 410 Gone: its endpoint is disabled at once. */
  gone: boolean
}

export interface RecordArgs {
  nowMs: number
  records: AttemptRecord[]
  /** An endpoint whose attempts have all failed for this long is disabled. */
  disableAfterMs: number
}

/** The delay gets up to a tenth more (`random` in [0, 1)), so receivers coming back are not met by every retry at once. */
export function nextAttemptAt(attempt: number, succeeded: boolean, nowMs: number, retryDelaysMs: readonly number[], random: number): number | null {
  const delay = retryDelaysMs[attempt - 1]
  if (succeeded || delay === undefined) return null
  return nowMs + Math.round(delay * (1 + 0.1 * random))
}

/** Why the endpoint is disabled after this attempt, or null. */
export function disableReason(gone: boolean, failingSinceMs: number, nowMs: number, disableAfterMs: number): string | null {
  if (gone) return 'the endpoint answered 410 Gone'
  if (nowMs - failingSinceMs >= disableAfterMs) return `every attempt since ${new Date(failingSinceMs).toISOString()} has failed`
  return null
}

/** Records attempts in the log, their deliveries and their endpoints, a transaction per owner; returns the endpoints it disabled. */
export async function recordAttempts({ transact }: JobDatabase, { nowMs, records, disableAfterMs }: RecordArgs): Promise<string[]> {
  const disabled: string[] = []
  for (const [ownerId, own] of byProvider(records, 'ownerId')) {
    disabled.push(...(await transact(recordOwnerAttempts, ownerId, own, nowMs, disableAfterMs)))
  }
  return disabled
}

/** An attempt whose delivery is no longer owed (endpoint deleted, or recorded by another instance after our lease ran out) leaves no trace. */
export async function recordOwnerAttempts(
  tx: Tx,
  ownerId: string,
  records: readonly AttemptRecord[],
  nowMs: number,
  disableAfterMs: number,
): Promise<string[]> {
  // RETURNING tells which deliveries were still owed.
  const done = records.filter((record) => record.retryAtMs === null).map((record) => record.deliveryId)
  const retries = records.filter((record) => record.retryAtMs !== null)
  const owed = new Set<string>()
  if (done.length > 0) {
    const removed = await tx.deleteFrom('webhook_deliveries').where('owner_id', '=', ownerId).where('id', 'in', done).returning('id').execute()
    for (const row of removed) owed.add(row.id)
  }
  // One statement each: once an endpoint has failed it has one attempt in flight at a time, so retries come few at once.
  for (const record of retries) {
    const rescheduled = await tx
      .updateTable('webhook_deliveries')
      .set({ attempts: record.attempt, next_attempt_at_ms: record.retryAtMs as number, lease_until_ms: null })
      .where('owner_id', '=', ownerId)
      .where('id', '=', record.deliveryId)
      .returning('id')
      .executeTakeFirst()
    if (rescheduled) owed.add(rescheduled.id)
  }
  const recorded = records.filter((record) => owed.has(record.deliveryId))
  if (recorded.length === 0) return []
  await tx
    .insertInto('webhook_attempts')
    .values(
      recorded.map((record) => ({
        owner_id: ownerId,
        endpoint_id: record.endpointId,
        event_id: record.eventId,
        event_type: record.type,
        attempt: record.attempt,
        outcome: record.succeeded ? ('succeeded' as const) : ('failed' as const),
        response_status: record.responseStatus,
        duration_ms: record.durationMs,
        at_ms: record.atMs,
        error: record.error,
      })),
    )
    .execute()

  // Each endpoint once, by its latest attempt here; in one order on every instance, so none waits on another.
  const latest = new Map<string, AttemptRecord>()
  const firstFailure = new Map<string, number>()
  const gone = new Set<string>()
  for (const record of recorded) {
    latest.set(record.endpointId, record)
    if (record.gone) gone.add(record.endpointId)
    if (record.succeeded) firstFailure.delete(record.endpointId)
    else if (!firstFailure.has(record.endpointId)) firstFailure.set(record.endpointId, record.atMs)
  }
  const disabled: string[] = []
  for (const endpointId of [...latest.keys()].sort()) {
    const endpoint = (qb: UpdateQueryBuilder<Tables, 'webhook_endpoints', 'webhook_endpoints', UpdateResult>) =>
      qb.where('owner_id', '=', ownerId).where('id', '=', endpointId)
    if ((latest.get(endpointId) as AttemptRecord).succeeded) {
      await tx.updateTable('webhook_endpoints').set({ failing_since_ms: null }).$call(endpoint).where('failing_since_ms', 'is not', null).execute()
      continue
    }
    const failing = await tx
      .updateTable('webhook_endpoints')
      .set((eb) => ({ failing_since_ms: eb.fn.coalesce('failing_since_ms', eb.cast<number>(eb.val(firstFailure.get(endpointId) as number), 'bigint')) }))
      .$call(endpoint)
      .where('status', '=', 'enabled')
      .returning('failing_since_ms')
      .executeTakeFirst()
    if (!failing) continue
    const reason = disableReason(gone.has(endpointId), Number(failing.failing_since_ms), nowMs, disableAfterMs)
    if (reason === null) continue
    await tx.updateTable('webhook_endpoints').set({ status: 'disabled', disabled_reason: reason }).$call(endpoint).execute()
    disabled.push(endpointId)
  }
  return disabled
}
