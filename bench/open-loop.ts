/**
 * Load at a fixed arrival rate ("open loop"): request i is due at start + i/rate, whether or not earlier ones
 * have been answered, and its latency runs from when it was due, not from when a free connection sent it. A
 * server that stalls for 100 ms is then charged for every request that arrived during the stall, as a real
 * client population would experience it (the coordinated-omission problem; wrk2 and Gil Tene's HdrHistogram
 * notes describe it).
 *
 * autocannon's rate option measured the wrong thing here: each connection sends its share of a second's
 * requests back to back at the start of the second, then waits (lib/httpClient.js, reqsMadeThisSecond), so
 * "1,000/s" was 50 bursts of 20; and its correction records every latency again at 1 ms steps down to 1 ms
 * (recordValueWithExpectedInterval with Math.ceil(1 / rate)), which fills the tail with invented values.
 */
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'
import { pickKind, uniqueBody, type CountedResult, type LoadOptions, type RequestKind } from './load.js'

export interface OpenLoopOptions extends LoadOptions {
  rate: number
  /** Given, every answer's status and body are passed to it (the body is read, not dropped). */
  onAnswer?: (status: number, body: string) => void
}

export async function runOpenLoop(baseUrl: string, kinds: RequestKind[], { connections, durationS, rate, onAnswer }: OpenLoopOptions): Promise<CountedResult> {
  // Requests beyond `connections` in flight wait in the pool's queue; their wait counts, as it should.
  const pool = new Pool(baseUrl, { connections, pipelining: 1, headersTimeout: 5000, bodyTimeout: 5000 })
  const total = Math.round(rate * durationS)
  const intervalMs = 1000 / rate
  const latencies = new Float64Array(total)
  let failures = 0
  const statuses: Record<string, number> = {}
  const count = (status: string) => (statuses[status] = (statuses[status] ?? 0) + 1)
  let sent = 0
  const inFlight: Array<Promise<void>> = []
  const start = performance.now()

  const send = (index: number, dueAt: number) => {
    const kind = pickKind(kinds)
    return pool
      .request({ method: kind.method, path: kind.path, headers: kind.headers, body: uniqueBody(kind) })
      .then(async (response) => {
        if (onAnswer) onAnswer(response.statusCode, await response.body.text())
        else await response.body.dump()
        count(String(response.statusCode))
        if (response.statusCode >= 300) failures++
      })
      .catch(() => {
        count('no answer')
        failures++
      })
      .finally(() => {
        latencies[index] = performance.now() - dueAt
      })
  }

  // A timer cannot fire every 0.25 ms: each tick sends every request that has fallen due since the last one.
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now()
      while (sent < total && start + sent * intervalMs <= now) {
        inFlight.push(send(sent, start + sent * intervalMs))
        sent++
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * intervalMs - performance.now()))
      else resolve()
    }
    tick()
  })
  await Promise.all(inFlight)
  const elapsedS = (performance.now() - start) / 1000
  await pool.close()

  latencies.sort()
  const percentile = (p: number) => latencies[Math.min(total - 1, Math.floor((p / 100) * total))] ?? NaN
  return {
    tool: 'open loop',
    requests: total,
    rps: total / elapsedS,
    p50Ms: percentile(50),
    p99Ms: percentile(99),
    failures,
    statuses,
  }
}
