import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { test } from 'node:test'
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core'
import { fixtureImages, listingBody } from './fixtures.js'
import { createTestDatabase, type TestDatabase } from './helper.js'
import { runCli, startServer, type ServerProcess } from './process.js'

/**
 * What the console's browser tests share: Debian's Chromium driven by playwright-core, and the service as a real
 * process on its own database (`node dist/cli/main.js serve`, the page and assets as `npm run build` made them).
 */

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

const LAUNCH_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-quic',
]

/**
 * True when the browser is there. When it is not, the file's tests are declared skipped (never passed) with a
 * loud line saying how to run them; under CI=true a missing browser fails the run instead.
 */
export function browserAvailable(): boolean {
  if (existsSync(CHROMIUM)) return true
  const how = `install Chromium (apt-get install -y chromium) or set CHROMIUM_PATH, then run npm run test:console`
  if (process.env.CI === 'true') throw new Error(`no browser at ${CHROMIUM}, and CI=true requires the console's browser tests: ${how}`)
  console.warn(`\n!!!!! No browser at ${CHROMIUM}: the console's browser tests are SKIPPED. To run them: ${how} !!!!!\n`)
  test('console browser tests', { skip: `no browser at ${CHROMIUM}: ${how}` })
  return false
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS })
}

export const PHONE = { width: 360, height: 740 }
export const DESKTOP = { width: 1280, height: 800 }

export interface ConsoleService {
  server: ServerProcess
  baseUrl: string
  databaseUrl: string
  cli(...args: string[]): Promise<any>
  newProvider(name?: string): Promise<{ id: string; token: string; tokenId: string }>
  /** `marketplace create --name <name>`: a marketplace and its token, to make reservations with. */
  newMarketplace(name: string): Promise<{ id: string; token: string; tokenId: string }>
  /** `console-link --provider <id>` with PUBLIC_BASE_URL set to this service: the printed `{ url, expiresAt }`. */
  consoleLink(providerId: string): Promise<{ url: string; expiresAt: string }>
  /** A listing made through the API with the provider's token, as an integrator would; returns its id. */
  createListing(token: string, overrides?: Record<string, unknown>, itemCount?: number): Promise<string>
  /** The listing as the API has it, read with the provider's token. */
  readListing(token: string, id: string): Promise<any>
  close(): Promise<void>
}

export async function startConsoleService(env: Record<string, string> = {}): Promise<ConsoleService> {
  const database: TestDatabase = await createTestDatabase('sqlite')
  const server = await startServer({ DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true', ...env })
  const cli = async (...args: string[]) => {
    const result = await runCli(args, { DATABASE_URL: database.url, LOG_LEVEL: 'silent', PUBLIC_BASE_URL: server.baseUrl })
    if (result.code !== 0) throw new Error(`listing-service ${args.join(' ')} exited ${result.code}: ${result.stderr}`)
    return JSON.parse(result.stdout)
  }
  let count = 0
  return {
    server,
    baseUrl: server.baseUrl,
    databaseUrl: database.url,
    cli,
    async newProvider(name) {
      count += 1
      const provider = await cli('provider', 'create', '--name', name ?? `Bakery ${count}`, '--industry', 'bakery')
      return { id: provider.id, token: provider.token, tokenId: provider.tokenId }
    },
    async newMarketplace(name) {
      const marketplace = await cli('marketplace', 'create', '--name', name)
      return { id: marketplace.id, token: marketplace.token, tokenId: marketplace.tokenId }
    },
    consoleLink: (providerId) => cli('console-link', '--provider', providerId),
    async createListing(token, overrides = {}, itemCount = 1) {
      const response = await fetch(`${server.baseUrl}/api/v1/listing/create`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(listingBody(overrides, itemCount)),
      })
      const body = (await response.json()) as { listingId: string }
      if (response.status !== 201) throw new Error(`create answered ${response.status}: ${JSON.stringify(body)}`)
      return body.listingId
    },
    async readListing(token, id) {
      const response = await fetch(`${server.baseUrl}/api/v1/listing/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${token}` } })
      return response.json()
    },
    async close() {
      await server.stop()
      await database.drop()
    },
  }
}

/** An image URL the service can fetch (the fixture server), and one it cannot (a 404 there). */
export const goodImage = () => fixtureImages.url('/img/console.png')
export const missingImage = () => fixtureImages.url('/status/404')
/** Text served under an image's name: the service answers 415, naming the field. */
export const notAnImage = () => fixtureImages.url('/text/menu.png')

export interface Watched {
  page: Page
  /** Content-Security-Policy violations and page errors seen so far: a console test expects none. */
  problems: string[]
  /** The API's answers to the page, newest last, bodies of failures included: what `shown` reports. */
  answers: string[]
}

/** A page whose CSP violations and uncaught errors are collected, so that a test can assert there were none. */
export async function watchedPage(context: BrowserContext): Promise<Watched> {
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content.Security.Policy|Refused to/i.test(message.text())) problems.push(message.text())
  })
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  const answers: string[] = []
  page.on('response', async (response) => {
    if (!response.url().includes('/api/')) return
    const failed = response.status() >= 400 ? ` ${await response.text().catch(() => '')}` : ''
    answers.push(`${response.request().method()} ${response.url()} ${response.status()}${failed}`)
  })
  return { page, problems, answers }
}

/** Waits for `locator`; if it never shows, the failure says what the page showed instead: its alerts and the API's answers. */
export async function shown({ page, answers }: Watched, locator: Locator): Promise<void> {
  try {
    await locator.waitFor()
  } catch (error) {
    const alerts = await page
      .getByRole('alert')
      .allInnerTexts()
      .catch(() => [])
    throw new Error(`${(error as Error).message}\nalerts: ${JSON.stringify(alerts)}\nAPI answers:\n${answers.slice(-10).join('\n')}`)
  }
}

/** The id of the listing the page shows, from its address (`/console/listings/<id>`). */
export function listingIdOf(page: Page): string {
  return decodeURIComponent(new URL(page.url()).pathname.split('/').pop() as string)
}

/** The accessible description of an element: the text of the elements its aria-describedby names. */
export function descriptionOf(locator: Locator): Promise<string> {
  return locator.evaluate((element) =>
    (element.getAttribute('aria-describedby') ?? '')
      .split(/\s+/)
      .map((id) => document.getElementById(id)?.textContent ?? '')
      .join(' '),
  )
}

/** Signs in through the form with a token and waits for the listings page. */
export async function signInWithToken(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/console`)
  await page.getByLabel('API token').fill(token)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Listings', exact: true }).waitFor()
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8')

/**
 * Waits (bounded) until the new-listing form has read the provider's previous listing: the brand image URL is filled.
 * Typing into the brand before then races the prefill, which may land in the middle of Playwright's fill.
 */
export async function prefilledFromLastListing(page: Page): Promise<void> {
  await page.waitForFunction(() => (document.querySelector<HTMLInputElement>('[name="/brand/imageUrl"]')?.value ?? '') !== '', undefined, {
    timeout: 10_000,
  })
}

/**
 * Waits (bounded) until a first listing's form has started from the provider's name: `field` holds `name`.
 * Typing into that field before then races the prefill, which may land in the middle of Playwright's fill (select
 * all, then insert) and leave the typed text appended to the name.
 */
export async function startedFromProviderName(page: Page, field: string, name: string): Promise<void> {
  await page.waitForFunction(([pointer, value]) => document.querySelector<HTMLInputElement>(`[name="${pointer}"]`)?.value === value, [field, name] as const, {
    timeout: 10_000,
  })
}

export interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: string[]
}

/**
 * axe-core's serious and critical violations on the page as it is now. axe is evaluated through the DevTools
 * protocol, which the page's CSP does not govern, so the page is tested under its real policy.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(axeSource)
  const violations = await page.evaluate<AxeViolation[]>(
    `window.axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) })))`,
  )
  return violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
}
