/**
 * HTTP load for the benchmarks. As many requests as the server answers: wrk when it is installed (a C load
 * generator leaves more of a 2-core machine to the server under test), autocannon otherwise. At a fixed rate:
 * open-loop.ts. All run the same request mix and report the same figures.
 */
import { execFileSync, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { runOpenLoop } from './open-loop.js'

/** Where a request body must differ on every request (a create's referenceId), it holds this placeholder. */
export const UNIQUE = '@UNIQUE@'
/**
 * Where a body must hold a number that differs from the last request's (a PATCH's quantity, so that every PATCH
 * is a real change), it holds this placeholder: an integer from 1 to 1,000,000.
 */
export const COUNTER = '@COUNTER@'
const PLACEHOLDERS = /(@UNIQUE@|@COUNTER@)/

export interface RequestKind {
  /** Share of the mix; weights are relative. */
  weight: number
  method: 'GET' | 'POST' | 'PATCH'
  path: string
  headers: Record<string, string>
  body?: string
}

export interface LoadResult {
  tool: 'wrk' | 'autocannon' | 'open loop' | 'each once'
  requests: number
  rps: number
  p50Ms: number
  p99Ms: number
  /** Non-2xx answers plus socket errors and timeouts. */
  failures: number
}

/** With its answers by status code, and `no answer` for a request that failed or timed out without one. */
export type CountedResult = LoadResult & { statuses: Record<string, number> }

export interface LoadOptions {
  connections: number
  durationS: number
  /**
   * Requests per second for the whole run, instead of as many as the server answers. Latency targets hold "at
   * a rate": at saturation every connection queues and p50 is connections ÷ throughput by Little's law. wrk
   * has no rate control, so a fixed rate runs on our own open-loop generator (open-loop.ts).
   */
  rate?: number
  /**
   * For a maximum that open-loop runs will take a share of: autocannon is a Node client like open-loop.ts and
   * costs the shared cores about as much per request; wrk costs far less, so 70% of wrk's maximum was more than
   * the service could answer next to a Node generator (PostgreSQL soak, 2026-11-22: p99 1.1–5.9 s).
   */
  nodeClient?: boolean
}

export const loadTool: 'wrk' | 'autocannon' = (() => {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' })
    return 'wrk'
  } catch (error) {
    // wrk --version exits 1 after printing its version; only a missing binary means "not installed".
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'autocannon' : 'wrk'
  }
})()

export function runLoad(baseUrl: string, kinds: RequestKind[], options: LoadOptions): Promise<LoadResult> {
  const { rate } = options
  if (rate !== undefined) return runOpenLoop(baseUrl, kinds, { ...options, rate })
  return loadTool === 'wrk' && !options.nodeClient ? runWrk(baseUrl, kinds, options) : runAutocannon(baseUrl, kinds, options)
}

/** As many requests as the server answers, after a warm-up of `warmupS` seconds of the same load that is not counted. */
export async function runWarmedUp(baseUrl: string, kinds: RequestKind[], options: LoadOptions & { warmupS: number }): Promise<LoadResult> {
  await runLoad(baseUrl, kinds, { ...options, durationS: options.warmupS })
  return runLoad(baseUrl, kinds, options)
}

/** One request kind, drawn by weight. */
export function pickKind(kinds: RequestKind[]): RequestKind {
  const total = kinds.reduce((sum, kind) => sum + kind.weight, 0)
  let pick = Math.random() * total
  return kinds.find((k) => (pick -= k.weight) < 0) ?? (kinds.at(-1) as RequestKind)
}

// Two runs of one scenario must not replay each other's creates: every body gets this process's nonce.
const nonce = randomUUID().slice(0, 8)
let sequence = 0
/** The kind's body with its placeholders replaced: UNIQUE by a value never sent before, COUNTER by a number. */
export const uniqueBody = (kind: RequestKind) => {
  const n = ++sequence
  return kind.body?.replace(UNIQUE, `${nonce}-${n}`).replace(COUNTER, String((n % 1_000_000) + 1))
}

/** A Lua long string: bodies go in verbatim (UTF-8 bytes, quotes and all). */
const luaString = (text: string) => `[==[${text}]==]`

function wrkScript(kinds: RequestKind[]): string {
  const nonce = randomUUID().slice(0, 8) // two runs of one scenario must not replay each other's creates
  const total = kinds.reduce((sum, kind) => sum + kind.weight, 0)
  const entries = kinds.map((kind) => {
    const headers = Object.entries(kind.headers)
      .map(([name, value]) => `[ ${luaString(name)} ] = ${luaString(value)}`) // "[[" would open a long string
      .join(', ')
    // The body's text and placeholders in turn: a placeholder is 1 (UNIQUE) or 2 (COUNTER), filled per request.
    const parts = kind.body?.split(PLACEHOLDERS).map((part) => (part === UNIQUE ? '1' : part === COUNTER ? '2' : luaString(part)))
    return `{ weight = ${kind.weight}, method = "${kind.method}", path = ${luaString(kind.path)}, headers = { ${headers} }${
      parts === undefined ? '' : `, body = { ${parts.join(', ')} }`
    } }`
  })
  return `
local kinds = { ${entries.join(',\n  ')} }
local total = ${total}
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
-- Each thread has its own Lua state, and LuaJIT's generator starts from the same state in each: unseeded, both
-- threads would draw the same kinds in the same order (house.ts's random page: the same pages at the same time).
function init(args)
  math.randomseed(${Math.floor(Math.random() * 1e9)} + tid * 7919)
end
local n = 0
-- The two threads' counters start half the range apart: within a run they never send the same number together.
local function fill(parts)
  local out = {}
  for i, part in ipairs(parts) do
    if part == 1 then out[i] = "${nonce}-" .. tid .. "-" .. n
    elseif part == 2 then out[i] = tostring((tid * 500009 + n) % 1000000 + 1)
    else out[i] = part end
  end
  return table.concat(out)
end
function request()
  n = n + 1
  local pick = math.random() * total
  for i, kind in ipairs(kinds) do
    pick = pick - kind.weight
    if pick < 0 or i == #kinds then
      if kind.body then
        return wrk.format(kind.method, kind.path, kind.headers, fill(kind.body))
      end
      return wrk.format(kind.method, kind.path, kind.headers)
    end
  end
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_RESULT {"requests":%d,"durationUs":%d,"status":%d,"socket":%d,"p50Us":%d,"p99Us":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`
}

async function runWrk(baseUrl: string, kinds: RequestKind[], { connections, durationS }: LoadOptions): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'listing-wrk-'))
  const script = join(dir, 'mix.lua')
  writeFileSync(script, wrkScript(kinds))
  const args = ['-t2', `-c${connections}`, `-d${durationS}s`, '--timeout', '5s', '-s', script, baseUrl]
  const output = await new Promise<string>((resolve, reject) => {
    const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk))
    child.once('error', reject)
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`wrk exited with ${code}: ${out}`))))
  }).finally(() => rmSync(dir, { recursive: true, force: true }))
  const line = output.split('\n').find((l) => l.startsWith('WRK_RESULT '))
  if (!line) throw new Error(`wrk printed no result:\n${output}`)
  const r = JSON.parse(line.slice('WRK_RESULT '.length)) as Record<'requests' | 'durationUs' | 'p50Us' | 'p99Us' | 'status' | 'socket', number>
  return {
    tool: 'wrk',
    requests: r.requests,
    rps: r.requests / (r.durationUs / 1e6),
    p50Ms: r.p50Us / 1000,
    p99Ms: r.p99Us / 1000,
    failures: r.status + r.socket,
  }
}

async function runAutocannon(baseUrl: string, kinds: RequestKind[], { connections, durationS }: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: baseUrl,
    connections,
    duration: durationS,
    timeout: 5,
    requests: [
      {
        setupRequest: (request) => {
          const kind = pickKind(kinds)
          // A copy: autocannon adds content-length to the headers it is given, and a body of another length
          // sent later with the same object (open-loop.ts) then failed in undici.
          return { ...request, method: kind.method, path: kind.path, headers: { ...kind.headers }, body: uniqueBody(kind) }
        },
      },
    ],
  })
  return {
    tool: 'autocannon',
    requests: result.requests.total,
    rps: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    failures: result.non2xx + result.errors + result.timeouts,
  }
}
