/**
 * Two builds in one run, alternating (house.ts, compare.ts): A, the baseline, and B, the candidate. A build is a
 * root directory: a checkout with its own bench/seed.ts, src/, a built dist/ and node_modules. The builds may differ
 * in schema, so each seeds its own database with its own code (its seed.ts and src/db/connection.ts, imported here
 * under tsx) and serves it with its own dist/cli/main.js.
 */
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { openDatabase as OpenDatabase } from '../src/db/connection.js'
import type { ImageServer } from '../test/image-server.js'
import { freshDatabase, settle, type Dialect } from './databases.js'
import { fmt, listingBody, ROOT, startService, type CleanUps, type RunningService } from './lib.js'
import { UNIQUE, type RequestKind } from './load.js'
import type { seed as Seed } from './seed.js'

/** The options of a run of two builds; a benchmark adds its own. */
export const AB_OPTIONS = {
  /** A: a checkout with node_modules and a built dist/. */
  baseline: { type: 'string' },
  /** B: this checkout unless given. */
  candidate: { type: 'string', default: ROOT },
  dialects: { type: 'string', default: 'sqlite,postgres' },
  /** Listings of the provider whose pages are measured. */
  listings: { type: 'string', default: '100000' },
  /** Seconds per measurement, after a warm-up. */
  duration: { type: 'string', default: '8' },
  rounds: { type: 'string', default: '3' },
  connections: { type: 'string', default: '50' },
  /** A subset of the scenarios, comma-separated. */
  scenarios: { type: 'string' },
  /** The random page is drawn from 1..pages (default: the last page, so every page may be drawn). */
  pages: { type: 'string' },
} as const

export interface Build {
  label: string
  root: string
}

export const buildsOf = (baseline: string, candidate: string): [Build, Build] => [
  { label: 'A', root: resolve(baseline) },
  { label: 'B', root: resolve(candidate) },
]

/** The root and the commit checked out there, and whether tracked files differ from it, for a result's header. */
export function describeBuild(build: Build): string {
  const git = (...words: string[]) => execFileSync('git', ['-C', build.root, ...words], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
  try {
    const commit = git('log', '-1', '--format=%h %s')
    const changed = git('status', '--porcelain', '--untracked-files=no') === '' ? '' : ', with uncommitted changes'
    return `${build.root} (${commit.length > 80 ? `${commit.slice(0, 80)}…` : commit}${changed})`
  } catch {
    return build.root
  }
}

/** A build's own seed and openDatabase. The call stays what today's seed(database, count, options) takes. */
export interface BuildCode {
  seed: typeof Seed
  openDatabase: typeof OpenDatabase
}

export async function loadBuild(root: string): Promise<BuildCode> {
  for (const path of ['bench/seed.ts', 'src/db/connection.ts', 'dist/cli/main.js']) {
    if (!existsSync(join(root, path))) throw new Error(`${root} has no ${path}: a build is a checkout with node_modules and a built dist/`)
  }
  const seedModule = await import(pathToFileURL(join(root, 'bench/seed.ts')).href)
  const connectionModule = await import(pathToFileURL(join(root, 'src/db/connection.ts')).href)
  return { seed: seedModule.seed, openDatabase: connectionModule.openDatabase }
}

/**
 * What the pages measured met in the code before the house, for a result's header: SQLite kept up to 1,000 pages
 * until anything committed (SqliteReadCache), PostgreSQL answered identical pages in flight with one read.
 */
export const PAGES_NOTE =
  '(Before the house, SQLite kept up to 1,000 pages until a commit, so over fewer pages the random page came from that cache; PostgreSQL shares one read among identical pages in flight.)'

export interface PagesOptions {
  /** Listings of the seeded provider. */
  listings: number
  limit: number
  /** The random page is drawn from 1..pages. */
  pages: number
}

export const lastPage = ({ listings, limit }: Pick<PagesOptions, 'listings' | 'limit'>) => Math.ceil(listings / limit)

/** Pages of 10 of `listings`; the random page drawn from 1..`pages` (default: every page). */
export function pagesOptions(listings: number, pages: string | undefined): PagesOptions {
  const limit = 10
  const last = lastPage({ listings, limit })
  const options = { listings, limit, pages: pages === undefined ? last : Number(pages) }
  if (options.pages > last) throw new Error(`--pages ${options.pages} is past the last page (${last})`)
  return options
}

/** A build serving its pages database. */
export interface ServedPages {
  build: Build
  url: string
  service: RunningService
  /** The seeded provider's token: its pages are measured. */
  pagesToken: string
  /** A second provider's token: the creates go there, leaving the measured pages as seeded. */
  createsToken: string
  /** The creates provider's one listing made by the start-up check (1 item). */
  checkListingId: string
  seedSeconds: number
  pageOneBytes: Buffer
}

/**
 * A fresh database seeded by the build's own seed.ts with one provider of `listings` listings (3 items each) and a
 * second, near-empty provider that receives the creates, served by the build's own dist/. Checked before it is
 * measured: full pages at both ends and at the last one the random page draws, and a create accepted. The database
 * and the service are undone by `cleanups`.
 */
export async function servePages(dialect: Dialect, build: Build, images: ImageServer, cleanups: CleanUps, options: PagesOptions): Promise<ServedPages> {
  const code = await loadBuild(build.root)
  const fresh = await freshDatabase(dialect)
  cleanups.add(() => fresh.drop())
  const started = performance.now()
  const database = code.openDatabase(fresh.url)
  let pagesToken: string
  let createsToken: string
  try {
    createsToken = (await code.seed(database, 1, { providerName: 'Bench creates', analyze: false })).token
    pagesToken = (
      await code.seed(database, options.listings, {
        onProgress: (done) => {
          if (done % 100_000 === 0) console.error(`  ${dialect} ${build.label}: seeded ${done}`)
        },
      })
    ).token
    await settle(database)
  } finally {
    await database.close()
  }
  const seedSeconds = (performance.now() - started) / 1000
  console.error(`${dialect} ${build.label} (${build.root}): seeded ${options.listings} listings in ${seedSeconds.toFixed(1)} s`)
  const service = await startService({ DATABASE_URL: fresh.url, IMAGE_ALLOW_PRIVATE_NETWORKS: 'true' }, pagesToken, join(build.root, 'dist'))
  cleanups.add(() => service.stop())

  const page = async (n: number) => {
    const answer = await fetch(`${service.baseUrl}/api/v1/listing?page=${n}&limit=${options.limit}`, { headers: { authorization: `Bearer ${pagesToken}` } })
    const bytes = Buffer.from(await answer.arrayBuffer())
    const body = answer.status === 200 ? JSON.parse(bytes.toString('utf8')) : undefined
    if (body?.content?.length !== options.limit || body.recordCount !== options.listings) {
      throw new Error(
        `${build.label}: page ${n} answered ${answer.status}, not ${options.limit} of ${options.listings} listings: ${bytes.subarray(0, 300).toString()}`,
      )
    }
    return bytes
  }
  const pageOneBytes = await page(1)
  await page(lastPage(options))
  await page(options.pages)
  const created = await fetch(`${service.baseUrl}/api/v1/listing/create`, {
    method: 'POST',
    headers: { authorization: `Bearer ${createsToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(listingBody(`check-${build.label}`, images.url('/img/brand.png'), [undefined])),
  })
  if (!created.ok) throw new Error(`${build.label}: a create answered ${created.status}: ${await created.text()}`)
  const { listingId: checkListingId } = (await created.json()) as { listingId: string }
  return { build, url: fresh.url, service, pagesToken, createsToken, checkListingId, seedSeconds, pageOneBytes }
}

export type PagesScenario = 'random' | 'page1' | 'last' | 'create1'

/**
 * The requests of a pages scenario:
 *
 *   random  GET /api/v1/listing?page=P&limit=10, P drawn uniformly from 1..pages per request: every page of the
 *           seeded provider by default, so that no two requests are alike
 *   page1   GET /api/v1/listing?page=1&limit=10, the same URL from every connection
 *   last    GET /api/v1/listing?page=N/10&limit=10
 *   create1 POST /api/v1/listing/create to the creates provider, 1 item, a unique referenceId per request
 */
export function pagesRequests(scenario: PagesScenario, served: ServedPages, images: ImageServer, options: PagesOptions): RequestKind[] {
  const get = (page: number): RequestKind => ({
    weight: 1,
    method: 'GET',
    path: `/api/v1/listing?page=${page}&limit=${options.limit}`,
    headers: { authorization: `Bearer ${served.pagesToken}` },
  })
  switch (scenario) {
    case 'random':
      // One kind per page, equal weights: load.ts draws one at random for every request (wrk: per thread seeded).
      return Array.from({ length: options.pages }, (_, i) => get(i + 1))
    case 'page1':
      return [get(1)]
    case 'last':
      return [get(lastPage(options))]
    case 'create1':
      return [createRequest(served, JSON.stringify(listingBody(UNIQUE, images.url('/img/brand.png'), [undefined])))]
  }
}

/** A create of the creates provider with this body. */
export const createRequest = (served: ServedPages, body: string): RequestKind => ({
  weight: 1,
  method: 'POST',
  path: '/api/v1/listing/create',
  headers: { authorization: `Bearer ${served.createsToken}`, 'content-type': 'application/json' },
  body,
})

export const pagesTitle = (scenario: PagesScenario, options: PagesOptions): string =>
  ({
    random: `random page (1–${fmt(options.pages)}, limit ${options.limit}, drawn per request)`,
    page1: `page 1, limit ${options.limit}, same URL from every connection`,
    last: `last page (${fmt(lastPage(options))}), limit ${options.limit}`,
    create1: 'create, 1 item, unique referenceId',
  })[scenario]
