import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http'
import { createServer as createTcpServer, type AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

/**
 * A real webhook receiver on 127.0.0.1 (port 0) for the tests: it records every POST with its headers and body,
 * answers as the test says, and checks signatures with `standardwebhooks`, the specification's reference library.
 */

export interface Delivery {
  id: string
  timestamp: string
  signature: string
  headers: IncomingHttpHeaders
  body: string
  event: any
  /** Date.now() when the request's body had arrived. */
  arrivedAt: number
}

/** How to answer one delivery: a status, or `hang` (never answer; the connection stays open until closed). */
export type Answer = number | 'hang'

export interface Receiver {
  url: string
  deliveries: Delivery[]
  /** Most requests with one webhook-id in flight at once (a second instance attempting the same one would make it 2). */
  maxConcurrentSameId: number
  /** Answers from now on. */
  answer: (delivery: Delivery, index: number) => Answer
  /** Milliseconds each answer waits before it is sent. */
  delayMs: number
  /** Resolves once `predicate` holds of the deliveries (checked on each arrival), or rejects after `timeoutMs`. */
  waitFor(predicate: (deliveries: Delivery[]) => boolean, timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

/**
 * True when `secret` (whsec_…) signed this delivery (any of its signatures), by the reference library. The
 * library also refuses a timestamp more than 5 minutes from its clock; the service signs with the tests' clock,
 * so the library is asked at the delivery's own time.
 */
export function verifies(secret: string, delivery: Delivery): boolean {
  const realNow = Date.now
  Date.now = () => Number(delivery.timestamp) * 1000
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>)
    return true
  } catch {
    return false
  } finally {
    Date.now = realNow
  }
}

export async function startReceiver(answer: Receiver['answer'] = () => 200): Promise<Receiver> {
  const hanging = new Set<ServerResponse>()
  const inFlight = new Map<string, number>()
  const waiters = new Set<() => void>()
  const receiver: Receiver = {
    url: '',
    deliveries: [],
    maxConcurrentSameId: 0,
    answer,
    delayMs: 0,
    waitFor(predicate, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(receiver.deliveries)) return
          clearTimeout(timer)
          waiters.delete(check)
          resolve()
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`receiver: not there within ${timeoutMs} ms; ${receiver.deliveries.length} deliveries`))
        }, timeoutMs)
        waiters.add(check)
        check()
      })
    },
    close: async () => {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
  const server = createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
    request.on('end', () => {
      const header = (name: string) => String(request.headers[name] ?? '')
      const delivery: Delivery = {
        id: header('webhook-id'),
        timestamp: header('webhook-timestamp'),
        signature: header('webhook-signature'),
        headers: request.headers,
        body,
        event: JSON.parse(body),
        arrivedAt: Date.now(),
      }
      const index = receiver.deliveries.push(delivery) - 1
      const concurrent = (inFlight.get(delivery.id) ?? 0) + 1
      inFlight.set(delivery.id, concurrent)
      receiver.maxConcurrentSameId = Math.max(receiver.maxConcurrentSameId, concurrent)
      response.once('close', () => inFlight.set(delivery.id, (inFlight.get(delivery.id) ?? 1) - 1))
      for (const waiter of [...waiters]) waiter()
      const reply = receiver.answer(delivery, index)
      if (reply === 'hang') {
        hanging.add(response)
        return
      }
      setTimeout(() => response.writeHead(reply, reply >= 300 && reply < 400 ? { location: `${receiver.url}/moved` } : {}).end('ok'), receiver.delayMs)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`
  return receiver
}

/** A URL on 127.0.0.1 whose port nothing listens on: a receiver that refuses connections. */
export async function refusingUrl(): Promise<string> {
  const server = createTcpServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return `http://127.0.0.1:${port}/hooks`
}
