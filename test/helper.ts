import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { Redis } from 'ioredis'
import pg from 'pg'
import { buildApp, type AppDependencies } from '../src/app.js'
import { loadConfig, type Config } from '../src/config.js'
import { jobDatabase, openDatabase, type Database, type DialectName } from '../src/db/connection.js'
import { migrate, migrations } from '../src/db/migrate.js'
import { Drain } from '../src/http/drain.js'
import type { ImageCheck } from '../src/images/check.js'
import { Metrics } from '../src/metrics.js'
import { recordExpiries } from '../src/listings/expiry.js'
import { MarketplaceRepository } from '../src/providers/marketplaces.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { ResponseConformance } from './conformance.js'
import { POOLER_PREPARES } from './pgbouncer-support.js'

export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

let postgresAnswers: Promise<boolean> | undefined

async function probePostgres(): Promise<boolean> {
  const client = new pg.Client({ connectionString: TEST_POSTGRES_URL, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    await client.query('select 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/**
 * The dialects this run covers: `DIALECTS=sqlite,postgres` filters; PostgreSQL runs when it answers. When it
 * does not, its half is skipped with a loud line, except under CI=true, where that fails the run.
 */
export async function testDialects(): Promise<DialectName[]> {
  const wanted = (process.env.DIALECTS ?? 'sqlite,postgres').split(',').map((d) => d.trim())
  const dialects: DialectName[] = []
  if (wanted.includes('sqlite')) dialects.push('sqlite')
  if (wanted.includes('postgres')) {
    postgresAnswers ??= probePostgres()
    if (await postgresAnswers) {
      dialects.push('postgres')
    } else if (process.env.CI === 'true') {
      throw new Error(`PostgreSQL does not answer at ${TEST_POSTGRES_URL}, and CI=true requires it`)
    } else {
      console.warn(`\n!!!!! PostgreSQL does not answer at ${TEST_POSTGRES_URL}: its tests are SKIPPED !!!!!\n`)
      test('PostgreSQL half of this file', { skip: `PostgreSQL does not answer at ${TEST_POSTGRES_URL}` })
    }
  }
  return dialects
}

export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

let redisAnswers: Promise<boolean> | undefined

async function probeRedis(): Promise<boolean> {
  const client = new Redis(TEST_REDIS_URL, { lazyConnect: true, connectTimeout: 3000, retryStrategy: () => null })
  client.on('error', () => {})
  try {
    await client.connect()
    return (await client.ping()) === 'PONG'
  } catch {
    return false
  } finally {
    client.disconnect()
  }
}

/**
 * Whether this run covers the tests that need Redis: true when it answers at TEST_REDIS_URL. When it does not,
 * they are skipped with a loud line, except under CI=true, where that fails the run (as testDialects does).
 */
export async function testRedis(): Promise<boolean> {
  redisAnswers ??= probeRedis()
  if (await redisAnswers) return true
  if (process.env.CI === 'true') throw new Error(`Redis does not answer at ${TEST_REDIS_URL}, and CI=true requires it`)
  console.warn(`\n!!!!! Redis does not answer at ${TEST_REDIS_URL}: its tests are SKIPPED !!!!!\n`)
  test('Redis half of this file', { skip: `Redis does not answer at ${TEST_REDIS_URL}` })
  return false
}

export interface TestDatabase {
  url: string
  drop: () => Promise<void>
}

/** A database of its own: a fresh SQLite file in a temp folder, or a fresh PostgreSQL database. */
export async function createTestDatabase(dialect: DialectName): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'listing-test-'))
    return { url: `sqlite:${join(dir, 'listings.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) }
  }
  const name = `listing_test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(TEST_POSTGRES_URL)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: TEST_POSTGRES_URL })
      await client.connect()
      await client.query(`drop database if exists ${name} with (force)`)
      await client.end()
    },
  }
}

/**
 * A database of its own as it was just before migration `name`: the migrations before it run by hand (so there is
 * no schema_migrations table). `body` puts data there and runs `next`, the migration named, on it; the database is
 * dropped afterwards, also when the test fails.
 */
export async function beforeMigration(
  dialect: DialectName,
  name: string,
  body: (it: { database: Database; db: Kysely<any>; next: (typeof migrations)[number] }) => Promise<void>,
): Promise<void> {
  const at = migrations.findIndex((migration) => migration.name === name)
  const next = migrations[at]
  if (!next) throw new Error(`no migration ${name}`)
  const testDatabase = await createTestDatabase(dialect)
  const database = openDatabase(testDatabase.url)
  try {
    const db = database.kysely as Kysely<any>
    for (const migration of migrations.slice(0, at)) await migration.up(db, dialect)
    await body({ database, db, next })
  } finally {
    await database.close()
    await testDatabase.drop()
  }
}

/** A clock the test moves by hand. */
export interface TestClock {
  now: number
  (): number
}

export function testClock(start = Date.UTC(2026, 10, 21, 12, 0, 0, 0)): TestClock {
  const clock = (() => clock.now) as TestClock
  clock.now = start
  return clock
}

export interface Response {
  status: number
  headers: Headers
  text: string
  // Parsed JSON body; tests read fields from it freely.
  body: any
}

/** A fetch response read to its end, as the tests' Response. */
export async function readResponse(response: globalThis.Response): Promise<Response> {
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, body: parseJsonOrUndefined(text) }
}

/** A response body as JSON, or undefined when it is not JSON. */
export function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

export interface RequestOptions {
  token?: string
  headers?: Record<string, string>
  /** A value to send as JSON. */
  json?: unknown
  /** Bytes or text to send exactly as given (with the Content-Type in `headers`). */
  raw?: string | Uint8Array
}

export interface TestProvider {
  id: string
  token: string
  tokenId: string
}

export interface TestService {
  dialect: DialectName
  app: FastifyInstance
  database: Database
  databaseUrl: string
  baseUrl: string
  clock: TestClock
  config: Config
  providers: ProviderRepository
  /** The shutdown state server.ts would drive; a test starts it to see the service drain. */
  drain: Drain
  /** What the expiry sweeper does every 2 s in a running service (background.ts), once, now (by the test clock). */
  recordExpiries(): Promise<number>
  newProvider(input?: { name?: string; industry?: string }): Promise<TestProvider>
  /** A marketplace (docs/api.md#discovery) and its token. */
  newMarketplace(name?: string): Promise<TestProvider>
  request(method: string, path: string, options?: RequestOptions): Promise<Response>
  create(token: string, body: unknown): Promise<Response>
  list(token: string, query?: string): Promise<Response>
  close(): Promise<void>
}

export interface ServiceOptions {
  env?: Record<string, string>
  checkImages?: ImageCheck
  /** The URL the service connects with, given its test database's (e.g. through a proxy a test can cut). */
  connectVia?: (databaseUrl: string) => string
  rateLimit?: AppDependencies['rateLimit']
}

/** The real service on a real database, listening on 127.0.0.1 at a free port. */
export async function startService(dialect: DialectName, options: ServiceOptions = {}): Promise<TestService> {
  const testDatabase = await createTestDatabase(dialect)
  // Uploaded images in a folder of the service's own, gone with it.
  const imageFolder = mkdtempSync(join(tmpdir(), 'listing-images-'))
  const config = loadConfig({
    DATABASE_URL: options.connectVia?.(testDatabase.url) ?? testDatabase.url,
    LOG_LEVEL: 'silent',
    // The fixture images are served on loopback (see fixtures.ts).
    IMAGE_ALLOW_PRIVATE_NETWORKS: 'true',
    IMAGE_STORE_URL: `file:${imageFolder}`,
    ...(POOLER_PREPARES ? { DATABASE_POOLER_PREPARES: 'true' } : {}),
    ...options.env,
  })
  // Wired as server.ts wires them, so the service under test measures its database queries too.
  const metrics = new Metrics()
  const database = openDatabase(config.DATABASE_URL, { observeQuery: metrics.observeQuery, poolerPrepares: config.DATABASE_POOLER_PREPARES })
  await migrate(database)
  const clock = testClock()
  const drain = new Drain()
  const app = await buildApp({ config, database, clock, checkImages: options.checkImages, metrics, drain, rateLimit: options.rateLimit })
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const providers = new ProviderRepository(database)
  let providerCount = 0
  let conformance: Promise<ResponseConformance> | undefined

  async function request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`
    let body: string | Uint8Array | undefined = opts.raw
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json)
      headers['content-type'] ??= 'application/json'
    }
    const answer = await readResponse(await fetch(`${address}${path}`, { method, headers, body: body as BodyInit | undefined }))
    conformance ??= ResponseConformance.load(app)
    ;(await conformance).check(method, path, answer)
    return answer
  }

  return {
    dialect,
    app,
    database,
    databaseUrl: testDatabase.url,
    drain,
    recordExpiries: () => recordExpiries(jobDatabase(database), clock),
    baseUrl: address,
    clock,
    config,
    providers,
    async newProvider(input = {}) {
      providerCount += 1
      const provider = await providers.create({ name: input.name ?? `provider ${providerCount}`, industry: input.industry }, clock())
      return { id: provider.id, token: provider.token.token, tokenId: provider.token.id }
    },
    async newMarketplace(name = 'marketplace') {
      const marketplace = await new MarketplaceRepository(database).create(name, clock())
      return { id: marketplace.id, token: marketplace.token, tokenId: marketplace.tokenId }
    },
    request,
    create: (token, body) => request('POST', '/api/v1/listing/create', { token, json: body }),
    list: (token, query = '') => request('GET', `/api/v1/listing${query}`, { token }),
    async close() {
      await app.close()
      await database.close()
      await testDatabase.drop()
      rmSync(imageFolder, { recursive: true, force: true })
    },
  }
}

/**
 * Declares `body`'s tests once per dialect, each run against its own service, started before and closed after.
 * `service` is filled in before the first test runs.
 */
export async function describeEachDialect(
  title: string,
  body: (service: TestService, dialect: DialectName) => void,
  options: ServiceOptions = {},
): Promise<void> {
  for (const dialect of await testDialects()) {
    describe(`${title} [${dialect}]`, () => {
      const service = {} as TestService
      before(async () => {
        Object.assign(service, await startService(dialect, options))
      })
      after(async () => {
        await service.close?.()
      })
      body(service, dialect)
    })
  }
}
