/**
 * A PgBouncer of a test's own, in transaction mode, in front of the tests' PostgreSQL (TEST_POSTGRES_URL), on a
 * free port. Its settings are what docs/postgresql.md tells operators, and what .ci/run starts for the second pass
 * of the PostgreSQL tests: a wildcard database entry (each test file makes databases of its own), trust for the
 * tests' one role, and nothing in `ignore_startup_parameters` but extra_float_digits, so a client that sent
 * statement_timeout at connect would be refused, as a production PgBouncer refuses it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import { freePort } from './free-port.js'

export const PGBOUNCER = process.env.PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer'

/**
 * A PgBouncer that keeps prepared statements in transaction mode (1.21 or later), for DATABASE_POOLER_PREPARES:
 * Debian 12 ships 1.18, so scripts/build-pgbouncer.sh builds Debian 13's here.
 */
export const PREPARING_PGBOUNCER = process.env.PREPARING_PGBOUNCER_BIN ?? '/opt/pgbouncer-debian13/bin/pgbouncer'

/**
 * TEST_POOLER_PREPARES=true: TEST_POSTGRES_URL is a pooler that keeps prepared statements
 * (scripts/test-through-pgbouncer.sh with a PgBouncer of 1.21 or later), and the services under test are told so.
 */
export const POOLER_PREPARES = process.env.TEST_POOLER_PREPARES === 'true'

export const pgbouncerInstalled = (bin = PGBOUNCER) => existsSync(bin)

/** `PgBouncer 1.24.1`: the first line of `bin --version`. */
export const pgbouncerVersion = (bin = PGBOUNCER): string => execFileSync(bin, ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? ''

/** Whether the PgBouncer at `bin` keeps prepared statements in transaction mode: 1.21 or later. */
export function keepsPrepared(bin = PGBOUNCER): boolean {
  const [major = 0, minor = 0] = (/PgBouncer (\d+)\.(\d+)/.exec(pgbouncerVersion(bin))?.slice(1) ?? []).map(Number)
  return major > 1 || (major === 1 && minor >= 21)
}

export interface PgBouncer {
  /** `url` (a postgres:// URL of the upstream server, any database) rewritten to reach it through this PgBouncer. */
  via(url: string): string
  port: number
  /** It keeps prepared statements (1.21 or later, with `max_prepared_statements`): DATABASE_POOLER_PREPARES=true. */
  keepsPrepared: boolean
  /** The PgBouncer process (for its CPU time). */
  pid: number
  /** What PgBouncer logged so far. */
  log(): string
  stop(): Promise<void>
}

export interface PgBouncerOptions {
  /** The server it pools for; its host, port and user are used. Default: TEST_POSTGRES_URL's default. */
  upstream?: string
  poolMode?: 'transaction' | 'session'
  /** Server connections per database and user. */
  poolSize?: number
  /** The PgBouncer to run: PGBOUNCER unless given. One that keeps prepared statements is told to keep 200. */
  bin?: string
}

export async function startPgBouncer(options: PgBouncerOptions = {}): Promise<PgBouncer> {
  const upstream = new URL(options.upstream ?? process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres')
  const user = decodeURIComponent(upstream.username || 'postgres')
  const bin = options.bin ?? PGBOUNCER
  const preparing = keepsPrepared(bin)
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'listing-pgbouncer-'))
  const ini = join(dir, 'pgbouncer.ini')
  const logFile = join(dir, 'pgbouncer.log')
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`)
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 20}`,
      'max_client_conn = 2000',
      'ignore_startup_parameters = extra_float_digits',
      `logfile = ${logFile}`,
      'log_connections = 0',
      'log_disconnections = 0',
      ...(preparing ? ['max_prepared_statements = 200'] : []),
      '',
    ].join('\n'),
  )
  // PgBouncer will not run as root; it drops to the PostgreSQL server's own user, which must read its files.
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const uid = Number(/^postgres:[^:]*:(\d+):(\d+):/m.exec(readFileSync('/etc/passwd', 'utf8'))?.[1] ?? NaN)
    const gid = Number(/^postgres:[^:]*:(\d+):(\d+):/m.exec(readFileSync('/etc/passwd', 'utf8'))?.[2] ?? NaN)
    for (const file of [dir, ini, join(dir, 'userlist.txt')]) chownSync(file, uid, gid)
  }
  const child: ChildProcess = spawn(bin, [...(asRoot ? ['-u', 'postgres'] : []), ini], { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  let exited = false
  child.once('exit', () => (exited = true))
  // Also when the test's process ends without its after-hooks (file-timeout.ts): never leave a PgBouncer behind.
  const killOnExit = () => child.kill('SIGKILL')
  process.once('exit', killOnExit)
  const log = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '') + stderr

  const via = (url: string) => {
    const rewritten = new URL(url)
    rewritten.hostname = '127.0.0.1'
    rewritten.port = String(port)
    return rewritten.toString()
  }
  const stop = async () => {
    process.removeListener('exit', killOnExit)
    if (!exited) {
      const gone = new Promise((resolve) => child.once('exit', resolve))
      child.kill('SIGTERM') // immediate shutdown
      await Promise.race([gone, sleep(3000).then(() => child.kill('SIGKILL'))])
    }
    rmSync(dir, { recursive: true, force: true })
  }

  // Ready when a query passes through it.
  const deadline = Date.now() + 10_000
  for (;;) {
    if (exited) {
      await stop()
      throw new Error(`PgBouncer exited at start: ${log()}`)
    }
    const client = new pg.Client({ connectionString: via(upstream.toString()), connectionTimeoutMillis: 1000 })
    client.on('error', () => {})
    try {
      await client.connect()
      await client.query('select 1')
      await client.end()
      break
    } catch (error) {
      await client.end().catch(() => {})
      if (Date.now() > deadline) {
        await stop()
        throw new Error(`PgBouncer did not answer within 10 s (${(error as Error).message}): ${log()}`)
      }
      await sleep(100)
    }
  }
  return { via, port, keepsPrepared: preparing, pid: child.pid as number, log, stop }
}
