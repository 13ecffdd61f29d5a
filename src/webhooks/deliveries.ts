import { sql, type Kysely, type UpdateQueryBuilder, type UpdateResult } from 'kysely'
import { byProvider } from '../by-provider.js'
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
  provider_id: string
  endpoint_id: string
  /** Attempts made before this one. */
  attempts: number
  /** When it was due: a claim's deliveries come in this order. */
  next_attempt_at_ms: number
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

interface Candidate {
  provider_id: string
  id: string
  next_attempt_at_ms: number
}

/**
 * Takes due deliveries of enabled endpoints by setting their lease. Endpoints already at their share of attempts
 * in this process, or resting, are passed over in SQL, so one slow receiver with a long queue cannot fill the
 * claim and starve the others. An endpoint that is failing (its last attempt failed) gets one attempt at a time:
 * a receiver that is down is probed, not flooded, and its queue costs the database little.
 *
 * Provider by provider: the candidates, the oldest due first, are chosen by reads across providers that lock
 * nothing (dueCandidates); then each provider's are leased by a transaction of its own (leaseDeliveries), on that
 * provider's rows alone. There each is read again FOR UPDATE SKIP LOCKED on PostgreSQL and must still be free,
 * so two instances claiming at once take different ones; the lease then keeps them out of every other claim until
 * the attempt is recorded or the lease has run out.
 */
export async function claimDeliveries(db: Kysely<Tables>, args: ClaimArgs): Promise<Claim> {
  const { candidates, more } = await dueCandidates(db, args)
  const chosen = candidates.slice(0, args.limit)
  const deliveries: ClaimedDelivery[] = []
  for (const [providerId, rows] of byProvider(chosen)) {
    deliveries.push(
      ...(await leaseDeliveries(
        db,
        providerId,
        rows.map((row) => row.id),
        args,
      )),
    )
  }
  deliveries.sort((a, b) => a.next_attempt_at_ms - b.next_attempt_at_ms)
  return { deliveries, more: more || candidates.length > chosen.length }
}

/** Each endpoint's oldest free due deliveries, up to its room, all in due order; whether any endpoint has more. */
function dueCandidates(db: Kysely<Tables>, args: ClaimArgs): Promise<{ candidates: Candidate[]; more: boolean }> {
  return db.transaction().execute(async (tx) => {
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
      .select(['w.provider_id', 'w.id', 'w.failing_since_ms'])
      .where('w.status', '=', 'enabled')
      .$if(passedOver.length > 0, (qb) => qb.where('w.id', 'not in', passedOver))
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('webhook_deliveries as x')
            .select(sql.lit(1).as('one'))
            .whereRef('x.provider_id', '=', 'w.provider_id')
            .whereRef('x.endpoint_id', '=', 'w.id')
            .where('x.next_attempt_at_ms', '<=', args.nowMs),
        ),
      )
      .orderBy('w.provider_id')
      .orderBy('w.id')
      .execute()
    // Each endpoint's oldest due deliveries, read in index order. PostgreSQL without statistics on
    // webhook_deliveries (a new table, or autovacuum off) plans a bitmap scan of all of them and a sort instead:
    // only this transaction is told not to.
    if (onPostgres(tx)) await sql`set local enable_bitmapscan = off`.execute(tx)
    const candidates: Candidate[] = []
    let more = false
    for (const endpoint of endpoints) {
      const cap = endpoint.failing_since_ms === null ? args.perEndpoint : 1
      const room = Math.min(args.limit, cap - (args.running[endpoint.id] ?? 0))
      if (room <= 0) continue
      const due = await tx
        .selectFrom('webhook_deliveries')
        .select(['provider_id', 'id', 'next_attempt_at_ms'])
        .where('provider_id', '=', endpoint.provider_id)
        .where('endpoint_id', '=', endpoint.id)
        .where('next_attempt_at_ms', '<=', args.nowMs)
        .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<=', args.nowMs)]))
        .orderBy('next_attempt_at_ms')
        .limit(room)
        .execute()
      // A full share may leave more behind; the endpoint's attempts ending will call the next claim.
      if (due.length === room) more = true
      candidates.push(...due)
    }
    candidates.sort((a, b) => a.next_attempt_at_ms - b.next_attempt_at_ms)
    return { candidates, more }
  })
}

/** Leases those of one provider's deliveries `ids` that are still due and free, and reads what their attempts need. */
function leaseDeliveries(db: Kysely<Tables>, providerId: string, ids: readonly string[], args: ClaimArgs): Promise<ClaimedDelivery[]> {
  return db.transaction().execute(async (tx) => {
    const free = await tx
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('provider_id', '=', providerId)
      .where('id', 'in', ids)
      .where('next_attempt_at_ms', '<=', args.nowMs)
      .where((eb) => eb.or([eb('lease_until_ms', 'is', null), eb('lease_until_ms', '<=', args.nowMs)]))
      .$if(onPostgres(tx), (qb) => qb.forUpdate().skipLocked())
      .execute()
    if (free.length === 0) return []
    const taken = free.map((row) => row.id)
    await tx
      .updateTable('webhook_deliveries')
      .set({ lease_until_ms: args.leaseUntilMs })
      .where('provider_id', '=', providerId)
      .where('id', 'in', taken)
      .execute()
    return tx
      .selectFrom('webhook_deliveries as dl')
      .innerJoin('webhook_endpoints as w', (join) => join.onRef('w.provider_id', '=', 'dl.provider_id').onRef('w.id', '=', 'dl.endpoint_id'))
      .innerJoin('events as e', (join) => join.onRef('e.provider_id', '=', 'dl.provider_id').onRef('e.id', '=', 'dl.event_id'))
      .innerJoin('providers as p', 'p.id', 'dl.provider_id')
      .select([
        'dl.id as delivery_id',
        'dl.provider_id',
        'dl.endpoint_id',
        'dl.attempts',
        'dl.next_attempt_at_ms',
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
      .where('dl.provider_id', '=', providerId)
      .where('dl.id', 'in', taken)
      .execute()
  })
}

/** What one attempt came to, and what follows for its delivery (decided by the worker from the schedule). */
export interface AttemptRecord {
  deliveryId: string
  providerId: string
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
 * their endpoints (the run of failures; disabled on 410 or after five days of failures). Provider by provider,
 * one transaction each (recordProviderAttempts). Returns the endpoints this disabled.
 */
export async function recordAttempts(db: Kysely<Tables>, { nowMs, records, disableAfterMs }: RecordArgs): Promise<string[]> {
  const disabled: string[] = []
  const rows = records.map((record) => ({ provider_id: record.providerId, record }))
  for (const [providerId, own] of byProvider(rows)) {
    disabled.push(
      ...(await recordProviderAttempts(
        db,
        providerId,
        own.map((row) => row.record),
        nowMs,
        disableAfterMs,
      )),
    )
  }
  return disabled
}

/**
 * One provider's attempts, in one transaction. An attempt whose delivery is no longer owed — its endpoint was
 * deleted, or another instance recorded it after our lease ran out — leaves no trace.
 */
function recordProviderAttempts(
  db: Kysely<Tables>,
  providerId: string,
  records: readonly AttemptRecord[],
  nowMs: number,
  disableAfterMs: number,
): Promise<string[]> {
  return db.transaction().execute(async (tx) => {
    const owed = await tx
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('provider_id', '=', providerId)
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
    if (done.length > 0) await tx.deleteFrom('webhook_deliveries').where('provider_id', '=', providerId).where('id', 'in', done).execute()
    for (const record of recorded) {
      if (record.retryAtMs === null) continue
      await tx
        .updateTable('webhook_deliveries')
        .set({ attempts: record.attempt, next_attempt_at_ms: record.retryAtMs, lease_until_ms: null })
        .where('provider_id', '=', providerId)
        .where('id', '=', record.deliveryId)
        .execute()
    }
    await tx
      .insertInto('webhook_attempts')
      .values(
        recorded.map((record) => ({
          provider_id: providerId,
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
        qb.where('provider_id', '=', providerId).where('id', '=', endpointId)
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
  })
}
