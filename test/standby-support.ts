/**
 * A PostgreSQL primary and a hot standby of a test's own (docs/postgresql.md#reads-from-a-standby): two clusters
 * made with Debian's postgresql-common (`pg_createcluster` on free ports), the standby a `pg_basebackup -R` of the
 * primary. Never the machine's own cluster. `remove()` stops and drops both; so does the process's exit, when a
 * file ends without its after-hooks (file-timeout.ts).
 */
import { execFile, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import pg from 'pg'
import { freePort } from './free-port.js'

const run = promisify(execFile)

const TOOLS = ['/usr/bin/pg_createcluster', '/usr/bin/pg_ctlcluster', '/usr/bin/pg_dropcluster']
const SERVER_ROOT = '/usr/lib/postgresql'

/** The newest PostgreSQL with the server and pg_basebackup installed, or undefined. */
function serverVersion(): string | undefined {
  if (!existsSync(SERVER_ROOT)) return undefined
  return readdirSync(SERVER_ROOT)
    .filter((version) => existsSync(`${SERVER_ROOT}/${version}/bin/postgres`) && existsSync(`${SERVER_ROOT}/${version}/bin/pg_basebackup`))
    .sort((a, b) => Number(b) - Number(a))[0]
}

/**
 * How commands that manage clusters run: as root (postgresql-common switches to the cluster's owner itself, and
 * pg_basebackup runs as `postgres` through runuser), as `postgres`, or else through `sudo -n`.
 */
function privileges(): { admin: string[]; asPostgres: string[] } {
  if (process.getuid?.() === 0) return { admin: [], asPostgres: ['runuser', '-u', 'postgres', '--'] }
  if (process.env.USER === 'postgres') return { admin: [], asPostgres: [] }
  return { admin: ['sudo', '-n'], asPostgres: ['sudo', '-n', '-u', 'postgres'] }
}

/** Why this machine cannot run a standby of a test's own, or undefined when it can. */
export function standbyUnavailable(): string | undefined {
  const missing = TOOLS.filter((tool) => !existsSync(tool))
  if (missing.length > 0) return `${missing.join(', ')} missing (apt-get install postgresql-common)`
  if (!serverVersion()) return `no PostgreSQL server with pg_basebackup under ${SERVER_ROOT}`
  return undefined
}

/** `args` run through `prefix` (sudo, runuser or nothing), as a file and its arguments. */
function commandLine(prefix: string[], args: string[]): [string, string[]] {
  const line = [...prefix, ...args]
  return [line[0] as string, line.slice(1)]
}

async function command(prefix: string[], args: string[]): Promise<string> {
  const [file, rest] = commandLine(prefix, args)
  try {
    return (await run(file, rest, { timeout: 60_000 })).stdout
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string }
    throw new Error(`${[file, ...rest].join(' ')} failed: ${stderr || message}`)
  }
}

export interface PrimaryAndStandby {
  /** The clusters' names: their processes' titles hold them (`postgres: 15/<name>: …`). */
  names: { primary: string; standby: string }
  /** postgres:// URLs of `database` on each server. */
  primaryUrl(database: string): string
  standbyUrl(database: string): string
  /** Runs one statement on the primary's or the standby's `postgres` database; its rows. */
  query(on: 'primary' | 'standby', text: string): Promise<Array<Record<string, unknown>>>
  /** Waits, bounded, until the standby has replayed everything the primary had written when it was called. */
  caughtUp(timeoutMs?: number): Promise<void>
  pauseReplay(): Promise<void>
  resumeReplay(): Promise<void>
  stopStandby(): Promise<void>
  /** Stops and drops both clusters; safe to call more than once, and after a failed start. */
  remove(): Promise<void>
}

export async function startPrimaryAndStandby(): Promise<PrimaryAndStandby> {
  const version = serverVersion() as string
  const { admin, asPostgres } = privileges()
  const name = `listing_test_${randomBytes(4).toString('hex')}`
  const clusters = { primary: `${name}_primary`, standby: `${name}_standby` }
  const ports = { primary: await freePort(), standby: await freePort() }
  const made: string[] = []

  const drop = (cluster: string) => {
    spawnSync(...commandLine(admin, ['pg_dropcluster', '--stop', version, cluster]))
  }
  // The after-hooks do not run when file-timeout.ts ends the process: never leave a cluster behind.
  const dropOnExit = () => made.forEach(drop)
  process.once('exit', dropOnExit)
  const remove = async () => {
    process.removeListener('exit', dropOnExit)
    for (const cluster of made.splice(0).reverse()) await command(admin, ['pg_dropcluster', '--stop', version, cluster]).catch(() => drop(cluster))
  }

  const url = (port: number, database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`
  const query = async (on: 'primary' | 'standby', text: string) => {
    const client = new pg.Client({ connectionString: url(ports[on], 'postgres'), connectionTimeoutMillis: 3000 })
    await client.connect()
    try {
      return (await client.query<Record<string, unknown>>(text)).rows
    } finally {
      await client.end()
    }
  }
  // Trust on loopback, as the machine's own cluster has it; fsync off: nothing here must survive a power cut.
  const create = async (cluster: 'primary' | 'standby') => {
    await command(admin, [
      'pg_createcluster',
      version,
      clusters[cluster],
      '--port',
      String(ports[cluster]),
      '--start-conf',
      'manual',
      '-o',
      'fsync=off',
      '--',
      '--auth=trust',
    ])
    made.push(clusters[cluster])
  }
  const start = (cluster: 'primary' | 'standby') => command(admin, ['pg_ctlcluster', '--skip-systemctl-redirect', version, clusters[cluster], 'start'])

  try {
    await create('primary')
    await start('primary')
    await create('standby')
    // The standby's data directory becomes a copy of the primary's, with standby.signal and primary_conninfo (-R).
    const dataDirectory = `/var/lib/postgresql/${version}/${clusters.standby}`
    await command(asPostgres, ['find', dataDirectory, '-mindepth', '1', '-delete'])
    await command(asPostgres, [
      `${SERVER_ROOT}/${version}/bin/pg_basebackup`,
      '-D',
      dataDirectory,
      '-R',
      '-X',
      'stream',
      '-c',
      'fast',
      '-h',
      '127.0.0.1',
      '-p',
      String(ports.primary),
      '-U',
      'postgres',
    ])
    await start('standby')
  } catch (error) {
    await remove()
    throw error
  }

  const caughtUp = async (timeoutMs = 10_000) => {
    const [written] = await query('primary', 'select pg_current_wal_lsn()::text as lsn')
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const [replayed] = await query('standby', `select coalesce(pg_last_wal_replay_lsn() >= '${String(written?.lsn)}'::pg_lsn, false) as done`).catch(() => [])
      if (replayed?.done === true) return
      if (Date.now() > deadline) throw new Error(`the standby did not replay up to ${String(written?.lsn)} within ${timeoutMs} ms`)
      await sleep(50)
    }
  }

  return {
    names: clusters,
    primaryUrl: (database) => url(ports.primary, database),
    standbyUrl: (database) => url(ports.standby, database),
    query,
    caughtUp,
    // Replay has stopped once the standby says `paused`, not when the pause is asked for.
    async pauseReplay() {
      await query('standby', 'select pg_wal_replay_pause()')
      const deadline = Date.now() + 10_000
      while ((await query('standby', 'select pg_get_wal_replay_pause_state() as state'))[0]?.state !== 'paused') {
        if (Date.now() > deadline) throw new Error('the standby did not pause its replay within 10 s')
        await sleep(20)
      }
    },
    async resumeReplay() {
      await query('standby', 'select pg_wal_replay_resume()')
    },
    async stopStandby() {
      await command(admin, ['pg_ctlcluster', '--skip-systemctl-redirect', version, clusters.standby, 'stop', '-m', 'fast'])
    },
    remove,
  }
}
