import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import { Problem, PROBLEM_CONTENT_TYPE } from '../errors.js'

/* Requests Node's parser refuses before routing, answered as problem+json with an X-Request-Id like every other error. */

const byCode = new Map([
  ['ERR_HTTP_REQUEST_TIMEOUT', new Problem('request-timeout', 'the request was not received in time; the connection is closed')],
  ['HPE_HEADER_OVERFLOW', new Problem('request-headers-too-large', 'the request headers are too large')],
])
const MALFORMED = new Problem('invalid-request', 'the request is not valid HTTP/1.1')

/** Fastify's `clientErrorHandler`. */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const problem = byCode.get(error.code ?? '') ?? MALFORMED
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
