import { execute, query, type Script, type ScriptSql } from '../db/script.js'
import type { EventRow } from '../events/feed.js'

/*
 * The delivery worker's writes (worker.ts), as write scripts: claiming due deliveries and recording what their
 * attempts came to. Loaded by the SQLite writer thread: no Kysely.
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

/**
 * Takes due deliveries of enabled endpoints by setting their lease. On PostgreSQL the rows are read FOR UPDATE
 * SKIP LOCKED, so two instances claiming at once take different ones; the lease then keeps them out of every
 * other claim until the attempt is recorded or the lease has run out. Endpoints already at their share of
 * attempts in this process, or resting, are passed over in SQL, so one slow receiver with a long queue cannot
 * fill the claim and starve the others. An endpoint that is failing (its last attempt failed) gets one attempt
 * at a time: a receiver that is down is probed, not flooded, and its queue costs the database little.
 */
export function* claimDeliveries(d: ScriptSql, args: ClaimArgs): Script<Claim> {
  const passedOver = JSON.stringify([...Object.entries(args.running).filter(([, n]) => n >= args.perEndpoint).map(([id]) => id), ...args.resting])
  // The endpoints with something due, one index probe each; those at their share or resting are not asked at
  // all. Asking the deliveries first, in due order, had to step over every delivery owed to such an endpoint:
  // 10,000 owed to a dead receiver were read on every claim, a few times a second, to take none of them.
  const endpoints = yield* query<{ id: string; failing_since_ms: number | null }>(
    `select w.id, w.failing_since_ms from webhook_endpoints w
     where w.status = 'enabled' and not (${d.inJsonList('w.id')})
       and exists (select 1 from webhook_deliveries x where x.endpoint_id = w.id and x.next_attempt_at_ms <= ?)
     order by w.id`,
    [passedOver, args.nowMs],
  )
  // Each endpoint's oldest due deliveries, as many as its room in this process; then the oldest of them all.
  // PostgreSQL, where webhook_deliveries has no statistics yet (a new table, or autovacuum off as on this
  // machine), estimates a few rows per endpoint and plans a bitmap scan of all of them and a sort: 10 ms with
  // 30,000 owed, instead of reading the first few in index order. Only this transaction is told not to.
  if (d.dialect === 'postgres') yield* execute('set local enable_bitmapscan = off', [])
  const candidates: Array<{ id: string; endpoint_id: string; next_attempt_at_ms: number }> = []
  let more = false
  for (const endpoint of endpoints) {
    const cap = endpoint.failing_since_ms === null ? args.perEndpoint : 1
    const room = Math.min(args.limit, cap - (args.running[endpoint.id] ?? 0))
    if (room <= 0) continue
    const due = yield* query<{ id: string; endpoint_id: string; next_attempt_at_ms: number }>(
      `select id, endpoint_id, next_attempt_at_ms from webhook_deliveries
       where endpoint_id = ? and next_attempt_at_ms <= ? and (lease_until_ms is null or lease_until_ms <= ?)
       order by next_attempt_at_ms limit ?${d.forUpdateSkipLocked}`,
      [endpoint.id, args.nowMs, args.nowMs, room],
    )
    // A full share may leave more behind; the endpoint's attempts ending will call the next claim.
    if (due.length === room) more = true
    candidates.push(...due)
  }
  if (candidates.length === 0) return { deliveries: [], more }
  candidates.sort((a, b) => Number(a.next_attempt_at_ms) - Number(b.next_attempt_at_ms))
  const taken = candidates.slice(0, args.limit).map((candidate) => candidate.id)
  if (candidates.length > taken.length) more = true
  const ids = JSON.stringify(taken)
  yield* execute(`update webhook_deliveries set lease_until_ms = ? where ${d.inJsonList('id')}`, [args.leaseUntilMs, ids])
  const deliveries = yield* query<ClaimedDelivery>(
    `select dl.id as delivery_id, dl.endpoint_id, dl.attempts, w.url, w.secret, w.previous_secret, w.previous_secret_until_ms,
       e.id, e.seq, e.type, e.created_at_ms, e.snapshot, p.industry
     from webhook_deliveries dl
       join webhook_endpoints w on w.id = dl.endpoint_id
       join events e on e.id = dl.event_id
       join providers p on p.id = dl.provider_id
     where ${d.inJsonList('dl.id')}
     order by dl.next_attempt_at_ms`,
    [ids],
  )
  return { deliveries, more }
}

export interface Claim {
  deliveries: ClaimedDelivery[]
  /** Whether more was due than was claimed. */
  more: boolean
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
 * Records attempts: the log, the deliveries (removed when done, rescheduled otherwise, the lease released) and
 * their endpoints (the run of failures; disabled on 410 or after five days of failures). An attempt whose
 * delivery is no longer owed — its endpoint was deleted, or another instance recorded it after our lease ran
 * out — leaves no trace. Returns the endpoints this disabled.
 */
export function* recordAttempts(d: ScriptSql, { nowMs, records, disableAfterMs }: RecordArgs): Script<string[]> {
  if (records.length === 0) return []
  const owed = yield* query<{ id: string }>(
    `select id from webhook_deliveries where ${d.inJsonList('id')}${d.forUpdate}`,
    [JSON.stringify(records.map((record) => record.deliveryId))],
  )
  const stillOwed = new Set(owed.map((row) => row.id))
  const recorded = records.filter((record) => stillOwed.has(record.deliveryId))
  if (recorded.length === 0) return []

  const done = recorded.filter((record) => record.retryAtMs === null).map((record) => record.deliveryId)
  if (done.length > 0) {
    yield* execute(`delete from webhook_deliveries where ${d.inJsonList('id')}`, [JSON.stringify(done)])
  }
  for (const record of recorded) {
    if (record.retryAtMs === null) continue
    yield* execute('update webhook_deliveries set attempts = ?, next_attempt_at_ms = ?, lease_until_ms = null where id = ?', [
      record.attempt,
      record.retryAtMs,
      record.deliveryId,
    ])
  }
  yield* execute(
    `insert into webhook_attempts (endpoint_id, event_id, event_type, attempt, outcome, response_status, duration_ms, at_ms, error)
     select a.endpoint_id, a.event_id, a.type, a.attempt, a.outcome, a.response_status, a.duration_ms, a.at_ms, a.error
     from ${d.jsonRows('a', {
       endpoint_id: 'text',
       event_id: 'text',
       type: 'text',
       attempt: 'integer',
       outcome: 'text',
       response_status: 'integer',
       duration_ms: 'integer',
       at_ms: 'bigint',
       error: 'text',
     })}`,
    [
      JSON.stringify(
        recorded.map((record) => ({
          endpoint_id: record.endpointId,
          event_id: record.eventId,
          type: record.type,
          attempt: record.attempt,
          outcome: record.succeeded ? 'succeeded' : 'failed',
          response_status: record.responseStatus,
          duration_ms: record.durationMs,
          at_ms: record.atMs,
          error: record.error,
        })),
      ),
    ],
  )

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
      yield* execute('update webhook_endpoints set failing_since_ms = null where id = ? and failing_since_ms is not null', [endpointId])
      continue
    }
    const [endpoint] = yield* query<{ failing_since_ms: number }>(
      `update webhook_endpoints set failing_since_ms = coalesce(failing_since_ms, cast(? as bigint))
       where id = ? and status = 'enabled' returning failing_since_ms`,
      [firstFailure.get(endpointId) as number, endpointId],
    )
    if (!endpoint) continue
    const reason = gone.has(endpointId)
      ? 'the endpoint answered 410 Gone'
      : nowMs - Number(endpoint.failing_since_ms) >= disableAfterMs
        ? `every attempt since ${new Date(Number(endpoint.failing_since_ms)).toISOString()} has failed`
        : null
    if (reason === null) continue
    yield* execute("update webhook_endpoints set status = 'disabled', disabled_reason = ? where id = ?", [reason, endpointId])
    disabled.push(endpointId)
  }
  return disabled
}
