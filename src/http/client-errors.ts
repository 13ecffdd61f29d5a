import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { Problem, PROBLEM_CONTENT_TYPE } from '../errors.js'

/**
 * Node's HTTP parser refuses some requests before any route sees them: a client too slow to send its headers or
 * body (the timeouts in app.ts), headers over the size limit, or bytes that are not HTTP. Fastify answers those
 * with its own JSON; docs/api.md#errors wants every error as problem+json with an X-Request-Id, so this answers them.
 * They concern the connection, not a route, so no operation of the OpenAPI document lists them.
 */

const TIMEOUT = new Problem('request-timeout', 'the request was not received in time; the connection is closed')
const HEADERS_TOO_LARGE = new Problem('request-headers-too-large', 'the request headers are too large')
const MALFORMED = new Problem('invalid-request', 'the request is not valid HTTP/1.1')

function problemFor(code: string | undefined): Problem {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return TIMEOUT
  if (code === 'HPE_HEADER_OVERFLOW') return HEADERS_TOO_LARGE
  return MALFORMED
}

/** Fastify's `clientErrorHandler`: answers once if the socket can still be written to, then closes it. */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody left to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const problem = problemFor(error.code)
  if (socket.writable) {
    const text = JSON.stringify(problem.toBody())
    socket.write(
      `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n` +
        `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(text)}\r\n` +
        `X-Request-Id: ${randomUUID()}\r\n` +
        'Connection: close\r\n\r\n' +
        text,
    )
  }
  socket.destroy()
}
