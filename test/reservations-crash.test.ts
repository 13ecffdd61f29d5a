import assert from 'node:assert/strict'
import http from 'node:http'
import { after, describe, test } from 'node:test'
import { openDatabase, type Database } from '../src/db/connection.js'
import { MarketplaceRepository } from '../src/providers/marketplaces.js'
import { ProviderRepository } from '../src/providers/repository.js'
import { item, listingBody } from './fixtures.js'
import { createTestDatabase, parseJsonOrUndefined, testDialects } from './helper.js'
import { killAll, startServer, type ServerProcess } from './process.js'
import { seededRandom } from './seeded-random.js'
import { checkStockInvariant } from './stock-invariant.js'

/**
 * A reservation change answered 2xx is durable, and nothing is oversold, across kill -9 (docs/api.md#reservations).
 * The service runs as a real process while writers hold units of two small listings (and release or confirm some of
 * theirs, so the stock keeps moving); it is killed with SIGKILL mid-storm, three times on one database. After each
 * restart: every hold answered 201 is there and held as last acknowledged, the tables agree with themselves
 * (stock-invariant.ts), no unit is both sold and offered, and every request in flight at the kill retries safely.
 * A 503 (the database not answering in time, as on a busy machine) counts as in flight: either outcome, sent again.
 */

after(killAll)

const dialects = await testDialects()

const CYCLES = 3
const WRITERS = 12
const QUANTITIES = [
  [30, 20],
  [25, 15],
]

interface Answer {
  status: number
  body: any
}

function post(port: number, agent: http.Agent, path: string, token: string, json?: unknown): Promise<Answer> {
  const bytes = json === undefined ? undefined : Buffer.from(JSON.stringify(json))
  const headers: Record<string, string | number> = { authorization: `Bearer ${token}`, 'content-length': bytes?.length ?? 0 }
  if (bytes) headers['content-type'] = 'application/json'
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent, headers }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: parseJsonOrUndefined(text) }))
      response.on('error', reject)
      response.on('aborted', () => reject(new Error('response aborted')))
    })
    request.on('error', reject)
    request.end(bytes)
  })
}

interface Party {
  id: string
  token: string
}

/** A hold the test asked for, and what it knows of it. */
interface Hold {
  market: Party
  body: { listingId: string; referenceId: string; items: Array<{ position: number; quantity: number }> }
  /** Set once a 201 (or a replay's 200) has been read whole. */
  id?: string
  /** Its status as last acknowledged. */
  status?: 'held' | 'released' | 'confirmed'
  /** A hold or change sent and not answered before the kill: its outcome is either. */
  pending?: 'hold' | 'release' | 'confirm'
}

/**
 * WRITERS clients, each on its own keep-alive connection, hold 1–3 units of one or two items back to back, and now
 * and then release or confirm one of their held ones, until the process is killed once `killAfter` answers have come
 * (counted, not timed: a busy machine answers slower, and the kill must still land mid-storm).
 */
async function stormThenKill(server: ServerProcess, markets: Party[], listingIds: string[], holds: Map<string, Hold>, killAfter: number, random: () => number) {
  let killed = false
  const unexpected: string[] = []
  const counts = new Map<string, number>()
  let answered = 0
  let enough: () => void = () => {}
  const reached = new Promise<void>((resolve) => (enough = resolve))
  const count = (what: string) => {
    counts.set(what, (counts.get(what) ?? 0) + 1)
    if (++answered >= killAfter) enough()
  }
  const writer = async (n: number) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    const market = markets[n % markets.length] as Party
    try {
      while (!killed) {
        // Its marketplace's held ones, those of cycles before included; another writer's may be in flight already.
        const held = [...holds.values()].filter((hold) => hold.market === market && hold.status === 'held' && hold.pending === undefined)
        const roll = random()
        if (held.length > 0 && roll < 0.3) {
          const hold = held[Math.floor(random() * held.length)] as Hold
          const action = roll < 0.1 ? 'confirm' : 'release'
          hold.pending = action
          let answer: Answer
          try {
            answer = await post(server.port, agent, `/api/v1/reservations/${hold.id}/${action}`, market.token)
          } catch (error) {
            if (!killed) unexpected.push(`writer ${n}: ${(error as Error).message} before the kill`)
            return
          }
          count(answer.status === 200 ? action : `${action} ${answer.status}`)
          // 503: the database did not answer in time (a busy machine); the change may have happened, and is sent again.
          if (answer.status === 503) continue
          if (answer.status !== 200) unexpected.push(`writer ${n} ${action}: ${answer.status} ${JSON.stringify(answer.body)}`)
          hold.status = answer.body?.status
          hold.pending = undefined
          continue
        }
        const listingId = listingIds[Math.floor(random() * listingIds.length)] as string
        const positions = random() < 0.5 ? [0] : random() < 0.5 ? [1] : [1, 0]
        const body = {
          listingId,
          referenceId: `storm-${n}-${holds.size}-${Math.floor(random() * 1e9)}`,
          items: positions.map((position) => ({ position, quantity: 1 + Math.floor(random() * 3) })),
        }
        const hold: Hold = { market, body, pending: 'hold' }
        holds.set(body.referenceId, hold)
        let answer: Answer
        try {
          answer = await post(server.port, agent, '/api/v1/reservations', market.token, body)
        } catch (error) {
          if (!killed) unexpected.push(`writer ${n}: ${(error as Error).message} before the kill`)
          return
        }
        count(`hold ${answer.status}`)
        if (answer.status === 503) continue
        hold.pending = undefined
        if (answer.status === 201) {
          hold.id = answer.body.id
          hold.status = 'held'
        } else if (answer.status !== 409 || !['/problems/insufficient-stock', '/problems/listing-closed'].includes(answer.body?.type)) {
          unexpected.push(`writer ${n} hold: ${answer.status} ${JSON.stringify(answer.body)}`)
        }
      }
    } finally {
      agent.destroy()
    }
  }
  const writers = Array.from({ length: WRITERS }, (_, n) => writer(n))
  let timer: NodeJS.Timeout | undefined
  await Promise.race([reached, new Promise((resolve) => (timer = setTimeout(resolve, 30_000)))])
  clearTimeout(timer)
  killed = true
  server.child.kill('SIGKILL')
  assert.deepEqual(await server.closed, { code: null, signal: 'SIGKILL' })
  await Promise.all(writers)
  assert.deepEqual(unexpected, [])
  const unavailable = server.logLines().filter((line) => line.msg === 'database unavailable')
  return { counts, unavailable: [...new Set(unavailable.map((line) => String(line.err?.message)))] }
}

/** Every hold the test knows of against the tables: acknowledged ones exactly as acknowledged, the others either way. */
async function checkHolds(database: Database, holds: Map<string, Hold>) {
  const rows = await database.kysely.selectFrom('reservations').select(['id', 'marketplace_id', 'reference_id', 'status', 'counted', 'items_record']).execute()
  const byReference = new Map(rows.map((row) => [`${row.marketplace_id}/${row.reference_id}`, row]))
  assert.equal(byReference.size, rows.length, 'one reservation per referenceId and marketplace')
  let acknowledged = 0
  for (const hold of holds.values()) {
    const row = byReference.get(`${hold.market.id}/${hold.body.referenceId}`)
    const what = `${hold.body.referenceId} (${hold.id ?? 'no id'}, acknowledged ${hold.status ?? 'nothing'}, in flight: ${hold.pending ?? 'nothing'})`
    if (hold.id === undefined) {
      // Refused (nothing stored: a failed request does not reserve its referenceId), or in flight at the kill.
      if (hold.pending !== 'hold') assert.equal(row, undefined, `${what} was refused, yet stored`)
      else if (row) assert.deepEqual([row.status, row.counted], ['held', 1], what)
      continue
    }
    acknowledged += 1
    assert.ok(row, `${what}: acknowledged, and lost`)
    assert.equal(row.id, hold.id, what)
    assert.deepEqual(
      (JSON.parse(row.items_record) as Array<{ position: number; quantity: number }>).map(({ position, quantity }) => ({ position, quantity })),
      hold.body.items,
      what,
    )
    const possible = hold.pending === undefined ? [hold.status] : [hold.status, hold.pending === 'release' ? 'released' : 'confirmed']
    assert.ok(possible.includes(row.status), `${what}: stored ${row.status}`)
    assert.equal(row.counted, row.status === 'held' ? 1 : 0, what)
  }
  return { acknowledged, stored: rows.length }
}

/** Nothing is sold twice: per item, what is offered now and what confirmed reservations took are what it started with. */
function checkNothingOversold(stocks: Awaited<ReturnType<typeof checkStockInvariant>>, listingIds: string[]) {
  listingIds.forEach((listingId, n) => {
    const stock = stocks.get(listingId)
    assert.ok(stock)
    const { quantities, held, confirmed } = stock
    assert.deepEqual(
      quantities.map((quantity, k) => quantity + (confirmed[k] ?? 0)),
      QUANTITIES[n],
      `listing ${listingId}: quantity ${quantities.join()} + confirmed ${confirmed.join()} is what it offered`,
    )
    held.forEach((units, k) => assert.ok(units <= (quantities[k] ?? 0), `listing ${listingId} item ${k}: held ${units} > quantity ${quantities[k]}`))
  })
}

describe('kill -9 during a storm of holds', { concurrency: true }, () => {
  for (const dialect of dialects) {
    test(`[${dialect}] ${CYCLES} kills: no acknowledged hold lost, none oversold, the stock kept with its rows, in-flight holds retry safely`, async (t) => {
      const testDatabase = await createTestDatabase(dialect)
      const env = { DATABASE_URL: testDatabase.url, RATE_LIMIT_PER_MINUTE: '0' }
      // Slow to start on a busy machine: the default wait for "ready" is made for an idle one.
      const start = () => startServer(env, { timeoutMs: 60_000 })
      let server = await start()
      const database = openDatabase(testDatabase.url)
      const random = seededRandom(dialect === 'sqlite' ? 91 : 92)
      try {
        const provider = await new ProviderRepository(database).create({ name: 'Crash Bakery' }, Date.now())
        const markets: Party[] = []
        for (const name of ['One', 'Two', 'Three']) {
          const market = await new MarketplaceRepository(database).create(`Crash ${name}`, Date.now())
          markets.push({ id: market.id, token: market.token })
        }
        const listingIds: string[] = []
        const agent = new http.Agent()
        for (const quantities of QUANTITIES) {
          const body = listingBody({ items: quantities.map((quantity, k) => item(k, { quantity })) })
          const created = await post(server.port, agent, '/api/v1/listing/create', provider.token.token, body)
          assert.equal(created.status, 201, JSON.stringify(created.body))
          listingIds.push(created.body.listingId)
        }
        agent.destroy()
        const holds = new Map<string, Hold>()

        for (let cycle = 1; cycle <= CYCLES; cycle++) {
          const killAfter = 40 + Math.floor(random() * 80)
          const { counts, unavailable } = await stormThenKill(server, markets, listingIds, holds, killAfter, random)
          server = await start()

          const { acknowledged, stored } = await checkHolds(database, holds)
          checkNothingOversold(await checkStockInvariant(database.kysely, Date.now()), listingIds)

          // A hold in flight at the kill is stored whole or not at all; sent again, it replays or is decided now.
          const retry = new http.Agent()
          let retried = 0
          for (const hold of holds.values()) {
            if (hold.pending !== 'hold') continue
            const answer = await post(server.port, retry, '/api/v1/reservations', hold.market.token, hold.body)
            assert.ok([200, 201, 409].includes(answer.status), JSON.stringify(answer.body))
            if (answer.status === 409) assert.ok(['/problems/insufficient-stock', '/problems/listing-closed'].includes(answer.body.type))
            else Object.assign(hold, { id: answer.body.id, status: answer.body.status })
            hold.pending = undefined
            retried += 1
          }
          // A change in flight is sent again too: either way it ends where it was going.
          for (const hold of holds.values()) {
            if (hold.pending === undefined) continue
            const answer = await post(server.port, retry, `/api/v1/reservations/${hold.id}/${hold.pending}`, hold.market.token)
            assert.equal(answer.status, 200, JSON.stringify(answer.body))
            Object.assign(hold, { status: answer.body.status, pending: undefined })
            retried += 1
          }
          retry.destroy()
          await checkHolds(database, holds)
          checkNothingOversold(await checkStockInvariant(database.kysely, Date.now()), listingIds)
          t.diagnostic(
            `cycle ${cycle}: killed after ${killAfter} answers: ${JSON.stringify(Object.fromEntries(counts))}; ` +
              `${acknowledged} acknowledged holds of ${stored} stored; ${retried} retried` +
              (unavailable.length > 0 ? `; 503 for: ${unavailable.join(', ')}` : ''),
          )
        }
      } finally {
        await server.stop('SIGKILL')
        await database.close()
        await testDatabase.drop()
      }
    })
  }
})
