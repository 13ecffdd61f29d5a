import { sql, type Kysely } from 'kysely'
import { onPostgres } from '../db/dialect.js'
import type { Tables } from '../db/tables.js'
import type { EventRow } from '../events/feed.js'

/*
 * The delivery worker's writes (worker.ts): claiming due deliveries and recording what their attempts came to.
 */

export interface ClaimArgs {
  nowMs: number
  /** At most this many deliveries. */
  limit: number
  /** Claimed until then: another instance may take a delivery again only after (an attempt cut off by a crash). */
  leaseUntilMs: number
  /** At most this many attempts in flight per endpoint in this process (one while it is failing), counting… */
  perEndpoint: number
  /** …those already running, by endpoint id. */
  running: Record<string, number>
  /** Endpoints not to take deliveries of this time (failed a moment ago in this process). */
  resting: string[]
}

/** A claimed delivery with what its attempt needs: the endpoint's URL and secrets, the event and its provider's industry. */
export interface ClaimedDelivery extends EventRow {
  delivery_id: string
  endpoint_id: string
  /** Attempts made before this one. */
  attempts: number
  url: string
  secret: string
  previous_secret: string | null
  previous_secret_until_ms: number | null
  industry: string
}

export interface Claim {
  deliveries: ClaimedDelivery[]
  /** Whether more was due than was claimed. */
  more: boolean
}

/**
 * Takes due deliveries of enabled endpoints by setting their lease. On PostgreSQL the rows are read FOR UPDATE
 * SKIP LOCKED, so two instances claiming at once take different ones; the lease then keeps them out of every
 * other claim until the attempt is recorded or the lease has run out. Endpoints already at their share of
 * attempts in this process, or resting, are passed over in SQL, so one slow receiver with a long queue cannot
 * fill the claim and starve the others. An endpoint that is failing (its last attempt failed) gets one attempt
 * at a time: a receiver that is down is probed, not flooded, and its queue costs the database little.
 */
export function claimDeliveries(db: Kysely<Tables>, args: ClaimArgs): Promise<Claim> {
  return db.transaction().execute(async (tx) => {
    const postgres = onPostgres(tx)
    const passedOver = [
      ...Object.entries(args.running)
        .filter(([, n]) => n >= args.perEndpoint)
        .map(([id]) => id),
      ...args.resting,
    ]
    // The endpoints with something due, one index probe each; those at their share or resting are not asked at
    // all. Asking the deliveries first, in due order, had to step over every delivery owed to such an endpoint.
    const endpoints = await tx
      .selectFrom('webhook_endpoints as w')
      .select(['w.id', 'w.failing_since_ms'])
      .where('w.status', '=', 'enabled')
      .$if(passedOver.length > 0, (qb) => qb.where('w.id', 'not in', passedOver))
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('webhook_deliveries as x')
            .select(sql.lit(1).as('one'))
            .whereRef('x.endpoint_id', '=', 'w.id')
            .where('x.next_attempt_at_ms', '<=', args.nowMs),
        ),
      )
      .orderBy('w.id')
      .execute()
    // Each endpoint's oldest due deliveries, read in index order. PostgreSQL without statistics on
    // webhook_deliveries (a new table, or autovacuum off) plans a bitmap scan of all of them and a sort instead:
    // only this transaction is told not to.
    if (postgres) await sql`set local enable_bitmapscan = off`.execute(tx)
    const candidates: Array<{ id: string; next_attempt_at_ms: number }> = []
    let more = false
    for (const endpoint of endpoints) {
      const cap = endpoint.failing_since_ms === null ? args.perEndpoint : 1
      const room = Math.min(args.limit, cap - (args.running[endpoint.id] ?? 0))
      if (room <= 0) continue
      const due = await tx
        .selectFrom('webhook_deliveries')
        .select(['id', 'next_attempt_at_ms'])
        .where('endpoint_id', '=', endpoint.id)
        .where('next_attempt_at_ms', '<=', args.nowMs)
        .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<=', args.nowMs)]))
        .orderBy('next_attempt_at_ms')
        .limit(room)
        .$if(postgres, (qb) => qb.forUpdate().skipLocked())
        .execute()
      // A full share may leave more behind; the endpoint's attempts ending will call the next claim.
      if (due.length === room) more = true
      candidates.push(...due)
    }
    if (candidates.length === 0) return { deliveries: [], more }
    candidates.sort((a, b) => a.next_attempt_at_ms - b.next_attempt_at_ms)
    const taken = candidates.slice(0, args.limit).map((candidate) => candidate.id)
    if (candidates.length > taken.length) more = true
    await tx.updateTable('webhook_deliveries').set({ lease_until_ms: args.leaseUntilMs }).where('id', 'in', taken).execute()
    const deliveries = await tx
      .selectFrom('webhook_deliveries as dl')
      .innerJoin('webhook_endpoints as w', 'w.id', 'dl.endpoint_id')
      .innerJoin('events as e', 'e.id', 'dl.event_id')
      .innerJoin('providers as p', 'p.id', 'dl.provider_id')
      .select([
        'dl.id as delivery_id',
        'dl.endpoint_id',
        'dl.attempts',
        'w.url',
        'w.secret',
        'w.previous_secret',
        'w.previous_secret_until_ms',
        'e.id',
        'e.seq',
        'e.type',
        'e.created_at_ms',
        'e.snapshot',
        'p.industry',
      ])
      .where('dl.id', 'in', taken)
      .orderBy('dl.next_attempt_at_ms')
      .execute()
    return { deliveries, more }
  })
}

/** What one attempt came to, and what follows for its delivery (decided by the worker from the schedule). */
export interface AttemptRecord {
  deliveryId: string
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
  /** An endpoint whose attempts have all failed for this long is disabled (docs/api.md#webhooks: 5 days). */
  disableAfterMs: number
}

/**
 * When a delivery is tried again after attempt number `attempt` (from 1): after a failure, the schedule's delay for
 * that attempt (WEBHOOK_RETRY_SCHEDULE) plus up to a tenth more, drawn from `random` in [0, 1) so that receivers
 * coming back are not met by every retry at once; never after a success, nor after the schedule's last delay.
 */
export function nextAttemptAt(attempt: number, succeeded: boolean, nowMs: number, retryDelaysMs: readonly number[], random: number): number | null {
  const delay = retryDelaysMs[attempt - 1]
  if (succeeded || delay === undefined) return null
  return nowMs + Math.round(delay * (1 + 0.1 * random))
}

/**
 * Why an endpoint is disabled after this attempt, or null: a 410 Gone disables at once; otherwise every attempt
 * since `failingSinceMs` has failed, for `disableAfterMs` or longer.
 */
export function disableReason(gone: boolean, failingSinceMs: number, nowMs: number, disableAfterMs: number): string | null {
  if (gone) return 'the endpoint answered 410 Gone'
  if (nowMs - failingSinceMs >= disableAfterMs) return `every attempt since ${new Date(failingSinceMs).toISOString()} has failed`
  return null
}

/**
 * Records attempts: the log, the deliveries (removed when done, rescheduled otherwise, the lease released) and
 * their endpoints (the run of failures; disabled on 410 or after five days of failures). An attempt whose
 * delivery is no longer owed — its endpoint was deleted, or another instance recorded it after our lease ran
 * out — leaves no trace. Returns the endpoints this disabled.
 */
export function recordAttempts(db: Kysely<Tables>, { nowMs, records, disableAfterMs }: RecordArgs): Promise<string[]> {
  if (records.length === 0) return Promise.resolve([])
  return db.transaction().execute(async (tx) => {
    const owed = await tx
      .selectFrom('webhook_deliveries')
      .select('id')
      .where(
        'id',
        'in',
        records.map((record) => record.deliveryId),
      )
      .$if(onPostgres(tx), (qb) => qb.forUpdate())
      .execute()
    const stillOwed = new Set(owed.map((row) => row.id))
    const recorded = records.filter((record) => stillOwed.has(record.deliveryId))
    if (recorded.length === 0) return []

    const done = recorded.filter((record) => record.retryAtMs === null).map((record) => record.deliveryId)
    if (done.length > 0) await tx.deleteFrom('webhook_deliveries').where('id', 'in', done).execute()
    for (const record of recorded) {
      if (record.retryAtMs === null) continue
      await tx
        .updateTable('webhook_deliveries')
        .set({ attempts: record.attempt, next_attempt_at_ms: record.retryAtMs, lease_until_ms: null })
        .where('id', '=', record.deliveryId)
        .execute()
    }
    await tx
      .insertInto('webhook_attempts')
      .values(
        recorded.map((record) => ({
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
      if ((latest.get(endpointId) as AttemptRecord).succeeded) {
        await tx
          .updateTable('webhook_endpoints')
          .set({ failing_since_ms: null })
          .where('id', '=', endpointId)
          .where('failing_since_ms', 'is not', null)
          .execute()
        continue
      }
      const endpoint = await tx
        .updateTable('webhook_endpoints')
        .set((eb) => ({ failing_since_ms: eb.fn.coalesce('failing_since_ms', eb.cast<number>(eb.val(firstFailure.get(endpointId) as number), 'bigint')) }))
        .where('id', '=', endpointId)
        .where('status', '=', 'enabled')
        .returning('failing_since_ms')
        .executeTakeFirst()
      if (!endpoint) continue
      const reason = disableReason(gone.has(endpointId), Number(endpoint.failing_since_ms), nowMs, disableAfterMs)
      if (reason === null) continue
      await tx.updateTable('webhook_endpoints').set({ status: 'disabled', disabled_reason: reason }).where('id', '=', endpointId).execute()
      disabled.push(endpointId)
    }
    return disabled
  })
}
