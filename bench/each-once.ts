/**
 * A fixed piece of work timed: every request of a list sent once, `connections` at a time (closed loop: a
 * connection sends its next request when its last one is answered). For work whose requests all differ, such as
 * seeding listings through the API, each at its own place, which wrk's one script per run cannot send. A Node
 * client: its CPU shares the machine with the service, as autocannon's does (load.ts). A request not answered within
 * `timeoutMs` counts as a failure (the service may still have done it).
 */
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'
import { percentile } from './lib.js'
import type { CountedResult, RequestKind } from './load.js'

export type EachOnceResult = CountedResult

export async function runEachOnce(baseUrl: string, requests: RequestKind[], connections: number, timeoutMs = 5000): Promise<EachOnceResult> {
  const pool = new Pool(baseUrl, { connections, pipelining: 1, headersTimeout: timeoutMs, bodyTimeout: timeoutMs })
  const latencies: number[] = []
  let failures = 0
  const statuses: Record<string, number> = {}
  const count = (status: string) => (statuses[status] = (statuses[status] ?? 0) + 1)
  let next = 0
  const start = performance.now()
  const connection = async () => {
    for (let request = requests[next++]; request !== undefined; request = requests[next++]) {
      const sent = performance.now()
      try {
        const response = await pool.request({ method: request.method, path: request.path, headers: request.headers, body: request.body })
        await response.body.dump()
        count(String(response.statusCode))
        if (response.statusCode >= 300) failures++
      } catch {
        count('no answer')
        failures++
      }
      latencies.push(performance.now() - sent)
    }
  }
  await Promise.all(Array.from({ length: connections }, connection))
  const elapsedS = (performance.now() - start) / 1000
  await pool.close()
  return {
    tool: 'each once',
    requests: requests.length,
    rps: requests.length / elapsedS,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    failures,
    statuses,
  }
}
