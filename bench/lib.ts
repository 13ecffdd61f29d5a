import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, fstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, freemem, release, tmpdir, totalmem } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))

export interface RunningService {
  child: ChildProcess
  baseUrl: string
  token: string
  stop(): Promise<void>
}

/**
 * The service as `npm start` runs it (dist/), on a fresh SQLite file unless DATABASE_URL is given. On an empty
 * database the demo provider's token is read from the banner; on a seeded one, pass the seeded token.
 * `dist` runs another build instead, e.g. an earlier commit's, to measure a change in one run. `serveArgs` go after
 * `serve` (`--no-migrate` for an instance of a fleet whose database was migrated once, beforehand).
 */
export async function startService(
  env: Record<string, string> = {},
  token?: string,
  dist = join(ROOT, 'dist'),
  serveArgs: string[] = [],
): Promise<RunningService> {
  const dir = mkdtempSync(join(tmpdir(), 'listing-bench-'))
  // stdout goes to a file, as a log shipper tailing it would take it: the service writes its log synchronously,
  // so a pipe read by this process (busy generating load) could fill up and hold the service back.
  const logPath = join(dir, 'stdout.log')
  const log = openSync(logPath, 'w')
  // BENCH_NODE_ARGS: Node's own flags for every service a bench starts, e.g. `--cpu-prof --cpu-prof-dir=<dir>` to
  // profile both builds of a comparison (Node refuses --cpu-prof in NODE_OPTIONS).
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []
  const child = spawn(process.execPath, [...nodeArgs, join(dist, 'cli/main.js'), 'serve', ...serveArgs], {
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      DATABASE_URL: `sqlite:${join(dir, 'bench.db')}`,
      LOG_LEVEL: 'info', // as `npm start` runs it: one access-log line per request
      RATE_LIMIT_PER_MINUTE: '0',
      ...env,
    },
    stdio: ['ignore', log, 'inherit'],
  })
  closeSync(log)
  let exited: Error | undefined
  // The log's end only: one access-log line per request makes it hundreds of MB after a run of saturated phases,
  // past the longest string Node can read into, and every exit (a normal stop too) passes through here.
  child.once('exit', (code) => (exited = new Error(`service exited with ${code}: ${tail(logPath, 64 * 1024)}`)))
  // Start-up output up to the "ready" line holds the address and, on an empty database, the demo token.
  let stdout = ''
  let ready: { address: string } | undefined
  while (!ready) {
    if (exited) throw exited
    await sleep(20)
    stdout = readFileSync(logPath, 'utf8')
    const line = stdout.split('\n').find((l) => l.includes('"msg":"ready"'))
    if (line !== undefined) ready = JSON.parse(line) as { address: string }
  }
  return {
    child,
    baseUrl: ready.address,
    token: token ?? /lst_[A-Za-z0-9_-]{43}/.exec(stdout)?.[0] ?? '',
    stop: () =>
      new Promise((resolve) => {
        const done = () => {
          rmSync(dir, { recursive: true, force: true }) // its log and, unless DATABASE_URL was given, its database
          resolve()
        }
        // Already gone (a Ctrl-C reaches the whole process group): no 'exit' is coming, and waiting for one left
        // the caller's clean-up (dropping its databases) undone.
        if (child.exitCode !== null || child.signalCode !== null) {
          done()
          return
        }
        child.once('exit', done)
        child.kill('SIGTERM')
      }),
  }
}

/** The last `bytes` of a file, as text. */
function tail(path: string, bytes: number): string {
  const fd = openSync(path, 'r')
  try {
    const size = fstatSync(fd).size
    const buffer = Buffer.alloc(Math.min(bytes, size))
    readSync(fd, buffer, 0, buffer.length, size - buffer.length)
    return buffer.toString('utf8')
  } finally {
    closeSync(fd)
  }
}

/** Resident set size of a process, in bytes (Linux). */
export function rssBytes(pid: number): number {
  const pages = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1])
  return pages * 4096
}

// /proc/<pid>/stat counts CPU time in clock ticks: 100 a second on Linux/x86 (CLK_TCK, not readable from Node).
const TICKS_PER_SECOND = 100

/**
 * CPU seconds so far of each process whose command line holds `text`: a PostgreSQL backend's title names its
 * cluster (`postgres: 15/main: …`) and its database (` user database host`).
 */
export function processCpu(text: string): Map<string, number> {
  const found = new Map<string, number>()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text)) found.set(pid, cpuSeconds(pid))
    } catch {
      // ended meanwhile
    }
  }
  return found
}

/** CPU seconds (user + system, every thread) a process has used so far (Linux). */
export function cpuSeconds(pid: number | string): number {
  // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are 12th and 13th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
}

/** CPU seconds used so far by every process running `command` (e.g. "postgres": the server and its backends). */
export function cpuSecondsOfCommand(command: string): number {
  let total = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === command) total += cpuSeconds(pid)
    } catch {
      // the process ended meanwhile
    }
  }
  return total
}

/** RSS of the service every second while `work` runs; growth is judged after the first quarter (warm-up). */
export async function sampleRss<T>(pid: number, work: Promise<T>): Promise<{ result: T; afterWarmup: number; end: number; peak: number }> {
  const samples: number[] = []
  let running = true
  const sampler = (async () => {
    while (running) {
      samples.push(rssBytes(pid))
      await sleep(1000)
    }
  })()
  const result = await work
  running = false
  await sampler
  samples.push(rssBytes(pid))
  return {
    result,
    afterWarmup: samples[Math.floor(samples.length / 4)] as number,
    end: samples.at(-1) as number,
    peak: Math.max(...samples),
  }
}

/** A bare node:http server answering every request with `bytes` (bench/ceiling-server.mjs): the machine's ceiling. */
export async function startCeiling(bytes: Buffer): Promise<{ baseUrl: string; stop(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'listing-ceiling-'))
  writeFileSync(join(dir, 'page.json'), bytes)
  const child = spawn(process.execPath, [join(ROOT, 'bench/ceiling-server.mjs'), join(dir, 'page.json')], { stdio: ['ignore', 'pipe', 'inherit'] })
  const port = await new Promise<string>((done) => child.stdout?.setEncoding('utf8').once('data', (d: string) => done(d.trim())))
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    stop: () => {
      child.kill('SIGTERM')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A number for a table: thousands separated, `digits` decimals. */
export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })

export function medianOf(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length / 2
  return sorted.length % 2 === 1 ? (sorted[Math.floor(mid)] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
}

export function machine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU'
  const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`
  return `${cpus().length} × ${cpu}, ${gib(totalmem())} RAM (${gib(freemem())} free), Linux ${release()}, Node ${process.version}; ${machineSpeed()}`
}

/**
 * Two probes taken as the result is written, so that results from different machines can be told apart: on another
 * host of the same size, the same build's PATCH has cost the service's main thread four times what it cost the night
 * before (docs/benchmarks.md, "A slower machine"). The median of 5 tries each; the machine should be idle then.
 */
export function machineSpeed(): string {
  const median = (tries: number[]) => [...tries].sort((a, b) => a - b)[tries.length >> 1] as number
  const timed = (work: () => void) => {
    const started = process.hrtime.bigint()
    work()
    return Number(process.hrtime.bigint() - started)
  }
  const fd = openSync('/dev/null', 'r')
  const syscallNs = median(
    Array.from(
      { length: 5 },
      () =>
        timed(() => {
          for (let i = 0; i < 20_000; i++) fstatSync(fd)
        }) / 20_000,
    ),
  )
  closeSync(fd)
  let _sink = 0 // a variable of the closure: the loop has an effect, and is not optimised away
  const loopMs = median(
    Array.from(
      { length: 5 },
      () =>
        timed(() => {
          for (let i = 0; i < 10_000_000; i++) _sink += i % 7
        }) / 1e6,
    ),
  )
  return `probes: a system call (fstat) ${(syscallNs / 1000).toFixed(2)} µs, a JavaScript loop of 10⁷ ${loopMs.toFixed(0)} ms`
}

/** Writes bench/results/<date>[-<name>].md and returns its path. */
export function writeResult(name: string | undefined, markdown: string): string {
  const dir = join(ROOT, 'bench', 'results')
  mkdirSync(dir, { recursive: true })
  const now = new Date().toISOString()
  const base = join(dir, `${now.slice(0, 10)}${name ? `-${name}` : ''}`)
  // A second run on the same day gets its time in the name: earlier results are kept, never overwritten.
  const path = existsSync(`${base}.md`) ? `${base}-${now.slice(11, 16).replace(':', '')}.md` : `${base}.md`
  writeFileSync(path, markdown)
  return path
}

/**
 * A create body with one item per entry of `itemImageUrls` (undefined: an item without an image), Arabic and
 * English names throughout. Both benchmarks send these.
 */
export function listingBody(referenceId: string, brandImageUrl: string, itemImageUrls: Array<string | undefined>) {
  return {
    referenceId,
    location: { latitude: 24.7136, longitude: 46.6753 },
    brand: { displayName: { ar: 'مخبز الصباح', en: 'Morning Bakery' }, urlSafeName: 'morning-bakery', imageUrl: brandImageUrl },
    listingDetails: { discountRate: 0.4, type: 'timed' },
    items: itemImageUrls.map((imageUrl, i) => ({
      displayName: { ar: `كرواسون ${i}`, en: `Croissant ${i}` },
      urlSafeName: `croissant-${i}`,
      category: 'product',
      subCategory: 'main_dish',
      price: 7.5 + i,
      quantity: 12,
      ...(imageUrl ? { imageUrl } : {}),
    })),
  }
}

export interface CleanUps {
  /** Something to undo (a service to stop, a database to drop): undone before what was added earlier. */
  add(undo: () => Promise<void> | void): void
  /** Undoes everything added so far, newest first, and may be added to and run again after. */
  run(): Promise<void>
}

/**
 * What a benchmark must undo, run at its end, on failure, and on SIGINT or SIGTERM (then it exits 130), so that
 * no database or process outlives an interrupted run. `what` says what that is, for the signal's message.
 */
export function cleanUpOnSignals(what: string): CleanUps {
  const undos: Array<() => Promise<void> | void> = []
  let running: Promise<void> | undefined
  // One clean-up at a time: a signal and the failure it causes in the run both wait for the same one.
  const run = () => {
    running ??= (async () => {
      while (undos.length > 0) {
        try {
          await undos.pop()?.()
        } catch (error) {
          console.error(`clean-up failed: ${(error as Error).message}`)
        }
      }
    })().finally(() => (running = undefined))
    return running
  }
  // Every signal, not only the first: Ctrl-C reaches this process twice under `npm run` (the terminal sends it to
  // the group, and npm passes it on), and the default action of a second one would end it before its databases
  // were dropped.
  let stopping = false
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) return
      stopping = true
      console.error(`${signal}: ${what}`)
      void run().then(() => process.exit(130))
    })
  }
  return { add: (undo) => undos.push(undo), run }
}
