import assert from 'node:assert/strict'
import http from 'node:http'
import net from 'node:net'
import { sql } from 'kysely'
import { parseJsonOrUndefined, readResponse, type Response, type TestService } from './helper.js'

/**
 * Shared by the HTTP tests: the RFC 9457 problem check of contract §4, requests the helper's fetch cannot make (a
 * body sent chunked, without Content-Length; a create on a connection the test chooses), a bare TCP connection
 * attempt, and a row count straight from the database.
 */

/** Visible ASCII, 1–128 characters: what docs/api.md#errors echoes, and so also what a generated id must look like. */
export const REQUEST_ID_SHAPE = /^[\x21-\x7E]{1,128}$/

/**
 * Asserts that `response` is the problem of docs/api.md#errors with this status and type, and returns its body.
 * `type` is the last segment: 'unauthorized' means '/problems/unauthorized'.
 */
export function assertProblem(response: Response, status: number, type: string): any {
  const context = `${response.status} ${response.text.slice(0, 500)}`
  assert.equal(response.status, status, context)
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json(\s*;|$)/, context)
  const body = response.body
  assert.ok(body !== null && typeof body === 'object' && !Array.isArray(body), `body is not an object: ${context}`)
  assert.equal(body.success, false, context)
  assert.equal(body.type, `/problems/${type}`, context)
  assert.equal(body.status, status, context)
  assert.equal(typeof body.title, 'string', context)
  assert.ok(body.title.length > 0, context)
  assert.equal(typeof body.detail, 'string', context)
  assert.ok(body.detail.length > 0, context)
  if (body.errors !== undefined) {
    assert.ok(Array.isArray(body.errors), context)
    for (const error of body.errors) {
      assert.equal(typeof error.detail, 'string', context)
      assert.ok(
        [error.pointer, error.parameter, error.header].some((place) => typeof place === 'string'),
        context,
      )
    }
  }
  const requestId = response.headers.get('x-request-id')
  assert.ok(requestId !== null && REQUEST_ID_SHAPE.test(requestId), `X-Request-Id is ${requestId}`)
  return body
}

/** The pointers named in a problem's errors[]. */
export function pointersOf(body: any): string[] {
  return (body?.errors ?? []).map((error: { pointer?: string }) => error.pointer)
}

function toResponse(status: number, rawHeaders: http.IncomingHttpHeaders, text: string): Response {
  const headers = new Headers()
  for (const [name, value] of Object.entries(rawHeaders)) {
    if (value === undefined) continue
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one)
  }
  return { status, headers, text, body: parseJsonOrUndefined(text) }
}

export interface ChunkedOptions {
  headers?: Record<string, string>
  /** Bytes sent before `total` is reached; whitespace is padded after them. */
  prefix?: string
  /** Total bytes to send. */
  total: number
}

/**
 * Sends a body with Node's http.request and no Content-Length, so it goes out with Transfer-Encoding: chunked and
 * the server learns its size only by reading it. Answers whatever the server answers, even mid-upload.
 */
export function postChunked(baseUrl: string, path: string, options: ChunkedOptions): Promise<Response> {
  return new Promise((resolve, reject) => {
    const request = http.request(new URL(path, baseUrl), { method: 'POST', headers: options.headers })
    let answered = false
    request.on('response', (response) => {
      answered = true
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => resolve(toResponse(response.statusCode ?? 0, response.headers, text)))
      response.on('error', reject)
    })
    // A server that answers and closes before the upload ends may make the write fail: the answer still counts.
    request.on('error', (error) => {
      if (!answered) reject(error)
    })
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    let sent = 0
    if (options.prefix) {
      request.write(options.prefix)
      sent += Buffer.byteLength(options.prefix)
    }
    const pump = () => {
      while (sent < options.total && !request.destroyed) {
        const part = chunk.subarray(0, Math.min(chunk.length, options.total - sent))
        sent += part.length
        if (!request.write(part)) {
          request.once('drain', pump)
          return
        }
      }
      request.end()
    }
    pump()
  })
}

export interface CreateAnswer {
  status: number
  headers: http.IncomingHttpHeaders
  body: any
}

/**
 * POSTs a create to the service at 127.0.0.1:`port` over `agent` (keep-alive, or one socket: the test's choice) and
 * resolves with its answer; rejects when the connection fails (as every request in flight at a kill does).
 */
export function postCreate(port: number, agent: http.Agent, token: string, body: unknown): Promise<CreateAnswer> {
  const bytes = Buffer.from(JSON.stringify(body))
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/v1/listing/create',
        agent,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': bytes.length },
      },
      (response) => {
        let text = ''
        response.setEncoding('utf8')
        response.on('data', (chunk: string) => (text += chunk))
        response.on('end', () => {
          try {
            resolve({ status: response.statusCode ?? 0, headers: response.headers, body: JSON.parse(text) })
          } catch (error) {
            reject(error)
          }
        })
        response.on('error', reject)
        response.on('aborted', () => reject(new Error('response aborted')))
      },
    )
    request.on('error', reject)
    request.end(bytes)
  })
}

/** Resolves with the error code of a fresh TCP connection attempt to 127.0.0.1:`port`, or 'connected'. */
export function tryConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve('connected')
    })
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
  })
}

/** Sends a body as a ReadableStream through fetch (chunked, no Content-Length). */
export async function postStream(baseUrl: string, path: string, options: { headers?: Record<string, string>; total: number }): Promise<Response> {
  let sent = 0
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= options.total) {
        controller.close()
        return
      }
      const size = Math.min(64 * 1024, options.total - sent)
      sent += size
      controller.enqueue(new Uint8Array(size).fill(0x20))
    },
  })
  const init = { method: 'POST', headers: options.headers, body: stream, duplex: 'half' } as RequestInit
  return readResponse(await fetch(new URL(path, baseUrl), init))
}

/** Rows in the listings table (every provider's), counted by the database itself. */
export async function countListings(service: TestService, providerId?: string): Promise<number> {
  const where = providerId === undefined ? sql`` : sql`where provider_id = ${providerId}`
  const result = await sql<{ n: number | string }>`select count(*) as n from listings ${where}`.execute(service.database.kysely)
  return Number(result.rows[0]?.n)
}

/** Items of every listing (listings.items_record), counted by the database itself. */
export async function countItems(service: TestService): Promise<number> {
  const items = service.dialect === 'postgres' ? sql`json_array_length(items_record::json)` : sql`json_array_length(items_record)`
  const result = await sql<{ n: number | string }>`select coalesce(sum(${items}), 0) as n from listings`.execute(service.database.kysely)
  return Number(result.rows[0]?.n)
}
