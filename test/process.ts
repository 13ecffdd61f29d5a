import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ConfigSchema } from '../src/config.js'
import { POOLER_PREPARES } from './pgbouncer-support.js'

/**
 * The service as a real process: `node dist/cli/main.js …` (what `npm start` and `npx listing-service` run).
 * dist/ is built by `npm run build`, which `npm test` runs first.
 */

export const ROOT = fileURLToPath(new URL('..', import.meta.url))
export const CLI = join(ROOT, 'dist', 'cli', 'main.js')

export const TOKEN_PATTERN = /lst_[A-Za-z0-9_-]{43}/g
export const TOKEN_SHAPE = /^lst_[A-Za-z0-9_-]{43}$/

const CONFIG_VARIABLES = Object.keys(ConfigSchema.properties)

/**
 * This process's environment without any of the service's own variables (so a DATABASE_URL or PORT in the
 * developer's shell cannot leak into a test), plus `overrides`; an `undefined` override leaves a variable unset.
 */
export function cleanEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const unset = new Set([...CONFIG_VARIABLES, ...Object.keys(overrides)])
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !unset.has(name)))
  if (POOLER_PREPARES) env.DATABASE_POOLER_PREPARES = 'true'
  for (const [name, value] of Object.entries(overrides)) if (value !== undefined) env[name] = value
  return env
}

// Every child a test starts, so `killAll` can end the ones a failing test left behind.
const live = new Set<ChildProcess>()

process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL')
})

function track(child: ChildProcess): ChildProcess {
  live.add(child)
  child.once('exit', () => live.delete(child))
  return child
}

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode })
      return
    }
    child.once('exit', (code, signal) => resolve({ code, signal }))
  })
}

/** SIGKILLs every child still running (each by its own handle) and waits for them to go. */
export async function killAll(): Promise<void> {
  await Promise.all(
    [...live].map((child) => {
      const exited = exitOf(child)
      child.kill('SIGKILL')
      return exited
    }),
  )
}

export interface Finished extends Exit {
  stdout: string
  stderr: string
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv
  cwd?: string
  /** Killed (and the test fails on its exit code) after this long. */
  timeoutMs?: number
}

/** Runs `command args…` (no shell) to its end. */
export function run(command: string, args: string[], options: RunOptions = {}): Promise<Finished> {
  const child = track(spawn(command, args, { cwd: options.cwd ?? ROOT, env: options.env ?? cleanEnv(), stdio: 'pipe' }))
  child.stdin?.end()
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    // 'close', not 'exit': every byte of stdout and stderr has been read by then.
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}

/** `node dist/cli/main.js args…` with `env` on top of a clean environment. */
export function runCli(args: string[], env: Record<string, string | undefined>, options: Omit<RunOptions, 'env'> = {}) {
  return run(process.execPath, [CLI, ...args], { ...options, env: cleanEnv(env) })
}

/** The JSON objects among `text`'s lines (pino's log lines); other lines (the demo banner) are skipped. */
export function jsonLines(text: string): Array<Record<string, any>> {
  const lines: Array<Record<string, any>> = []
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue
    try {
      lines.push(JSON.parse(line))
    } catch {
      // not JSON after all
    }
  }
  return lines
}

export interface ServerProcess {
  child: ChildProcess
  port: number
  baseUrl: string
  /** Everything written so far. */
  stdout(): string
  stderr(): string
  /** JSON lines written so far on stdout and stderr. */
  logLines(): Array<Record<string, any>>
  /** Demo tokens printed on stdout (each distinct token once). */
  printedTokens(): string[]
  /** Waits until some log line satisfies `predicate`. */
  waitForLog(predicate: (line: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>
  /** Resolves when the process has exited and its output is all read. */
  closed: Promise<Exit>
  /** Sends `signal` and waits for the exit (SIGKILL after `timeoutMs`, reported as signal SIGKILL). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit>
}

export interface ServeOptions {
  cwd?: string
  /** Arguments after `serve` (e.g. --no-migrate). */
  args?: string[]
  /** How long to wait for the "ready" line. */
  timeoutMs?: number
}

const READY_ADDRESS = /^http:\/\/127\.0\.0\.1:(\d+)$/

/**
 * Starts `node dist/cli/main.js serve` with PORT=0, HOST=127.0.0.1, LOG_LEVEL=info and `env` on top, and resolves
 * once it logs "ready", its last start-up line (rejects, with its stderr, if it exits or takes too long first).
 */
export async function startServer(env: Record<string, string | undefined>, options: ServeOptions = {}): Promise<ServerProcess> {
  const child = track(
    spawn(process.execPath, [CLI, 'serve', ...(options.args ?? [])], {
      cwd: options.cwd ?? ROOT,
      // IMAGE_ALLOW_PRIVATE_NETWORKS: the fixture images (fixtures.ts) are served on loopback.
      env: cleanEnv({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', IMAGE_ALLOW_PRIVATE_NETWORKS: 'true', ...env }),
      stdio: 'pipe',
    }),
  )
  child.stdin?.end()
  let stdout = ''
  let stderr = ''
  const waiters = new Set<() => void>()
  const notify = () => {
    for (const waiter of waiters) waiter()
  }
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    notify()
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
    notify()
  })
  // Set before the waiters are told: a waiter checks it at once, and a flag set in a `.then` would arrive a tick
  // late, leaving a server that exited before its "ready" to be noticed only at the wait's timeout.
  let hasClosed = false
  const closed = new Promise<Exit>((resolve) => {
    child.once('close', (code, signal) => {
      hasClosed = true
      resolve({ code, signal })
      notify()
    })
  })

  const logLines = () => [...jsonLines(stdout), ...jsonLines(stderr)]

  function waitForLog(predicate: (line: Record<string, any>) => boolean, timeoutMs = 5000): Promise<Record<string, any>> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = logLines().find(predicate)
        if (found) finish(() => resolve(found))
        else if (hasClosed) finish(() => reject(new Error(`the server exited first; stderr:\n${stderr}\nstdout:\n${stdout}`)))
      }
      const timer = setTimeout(
        () => finish(() => reject(new Error(`no such log line within ${timeoutMs} ms; stderr:\n${stderr}\nstdout:\n${stdout}`))),
        timeoutMs,
      )
      const finish = (settle: () => void) => {
        clearTimeout(timer)
        waiters.delete(check)
        settle()
      }
      waiters.add(check)
      check()
    })
  }

  let ready
  try {
    ready = await waitForLog((line) => line.msg === 'ready', options.timeoutMs ?? 60_000)
  } catch (error) {
    // Its pipes would keep the test process alive, and no caller has a handle to stop it with.
    child.kill('SIGKILL')
    throw error
  }
  const port = Number(READY_ADDRESS.exec(String(ready.address))?.[1])

  return {
    child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    stdout: () => stdout,
    stderr: () => stderr,
    logLines,
    printedTokens: () => [...new Set(stdout.match(TOKEN_PATTERN) ?? [])],
    waitForLog,
    closed,
    async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000) {
      if (hasClosed) return closed
      child.kill(signal)
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<Exit>((resolve) => {
        timer = setTimeout(() => {
          child.kill('SIGKILL')
          resolve({ code: null, signal: 'SIGKILL' })
        }, timeoutMs)
      })
      const exit = await Promise.race([closed, late])
      clearTimeout(timer)
      return exit
    },
  }
}
