/**
 * The benchmarks' webhook receiver (webhooks.ts, reservations.ts): a bare node:http server on 127.0.0.1, in the
 * benchmark's own process, answering 200 at once and keeping of each delivery what a lag and an exactly-once check
 * need (not its body: a saturated phase sends a hundred thousand). With the helpers around it: the endpoint's
 * registration, and the deliveries still owed, read from the database.
 */
import http, { type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import type { Database } from '../src/db/connection.js'
import { percentile } from './lib.js'

/** What the service needs in its environment to deliver to a receiver on 127.0.0.1. */
export const RECEIVER_ENV = { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' } as const

/** One delivery as it arrived. */
export interface Arrival {
  /** The webhook-id header: the event's id, the same on every attempt. */
  webhookId: string
  type: string
  /** The event's data.id: the listing's id for a listing event, the reservation's for a reservation event. */
  subject: string
  /** A reservation event's data.listingId, data.providerId and data.marketplace.id. */
  listingId?: string
  providerId?: string
  marketplaceId?: string
  /** Its arrival (the body complete) minus the event's createdAt, in ms. */
  lagMs: number
}

export interface Receiver {
  url: string
  arrivals: Arrival[]
  /**
   * Arrivals lacking webhook-id, webhook-timestamp or a `v1,` webhook-signature; once `secret` is set, also those
   * whose signature the reference library (standardwebhooks) does not verify.
   */
  unsigned: number
  /** The endpoint's secret (whsec_…), once its registration has answered. */
  secret?: string
  close(): Promise<void>
}

/** True when the three Standard Webhooks headers are there and, given a secret, sign the body. */
export function signed(body: string, headers: IncomingHttpHeaders, secret?: string): boolean {
  const present = typeof headers['webhook-id'] === 'string' && typeof headers['webhook-timestamp'] === 'string'
  if (!present || !String(headers['webhook-signature']).startsWith('v1,')) return false
  if (secret === undefined) return true
  try {
    new Webhook(secret).verify(body, headers as Record<string, string>)
    return true
  } catch {
    return false
  }
}

interface SentEvent {
  type: string
  createdAt: string
  data: { id?: string; listingId?: string; providerId?: string; marketplace?: { id?: string } }
}

export async function startReceiver(): Promise<Receiver> {
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const arrived = Date.now()
      // Answered first: the service's attempt succeeds on the status, whatever the checks below find.
      response.writeHead(200).end()
      const body = Buffer.concat(chunks).toString('utf8')
      if (!signed(body, request.headers, receiver.secret)) receiver.unsigned++
      const event = JSON.parse(body) as SentEvent
      receiver.arrivals.push({
        webhookId: String(request.headers['webhook-id']),
        type: event.type,
        subject: String(event.data.id),
        listingId: event.data.listingId,
        providerId: event.data.providerId,
        marketplaceId: event.data.marketplace?.id,
        lagMs: arrived - Date.parse(event.createdAt),
      })
    })
  })
  const receiver: Receiver = {
    url: '',
    arrivals: [],
    unsigned: 0,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
  return receiver
}

/** Registers an endpoint of the token's owner (a provider or a marketplace); `events` left out: every type. */
export async function addEndpoint(baseUrl: string, token: string, url: string, events?: readonly string[]): Promise<{ id: string; secret: string }> {
  const response = await fetch(`${baseUrl}/api/v1/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(events === undefined ? { url } : { url, events }),
  })
  if (response.status !== 201) throw new Error(`webhook create answered ${response.status}: ${await response.text()}`)
  return (await response.json()) as { id: string; secret: string }
}

/** Deletes an endpoint, and with it what it is still owed. */
export async function removeEndpoint(baseUrl: string, token: string, id: string): Promise<void> {
  const response = await fetch(`${baseUrl}/api/v1/webhooks/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })
  if (response.status !== 204) throw new Error(`webhook delete answered ${response.status}: ${await response.text()}`)
}

/** Deliveries still owed (to be attempted, or again), to these endpoints or, with none named, to any. */
export async function owed(database: Database, endpointIds?: readonly string[]): Promise<number> {
  // PostgreSQL's count is a bigint, which pg gives as a string.
  const query = database.kysely.selectFrom('webhook_deliveries').select((eb) => eb.fn.countAll<number | string>().as('n'))
  const [row] = await (endpointIds ? query.where('endpoint_id', 'in', endpointIds) : query).execute()
  return Number(row?.n ?? 0)
}

/** Delivery lags' p50, p99 and max, in ms. */
export const lagFigures = (lagsMs: number[]) => ({
  p50: percentile(lagsMs, 50),
  p99: percentile(lagsMs, 99),
  max: lagsMs.reduce((max, lag) => Math.max(max, lag), -Infinity),
})
