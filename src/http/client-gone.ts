import type { FastifyReply } from 'fastify'

/**
 * A signal that aborts when the client goes away before its answer is sent: its connection closed (the client
 * gave up, or timed out) while the request was still being worked on. The response's 'close' is the event to
 * watch: it fires when the answer has been sent, or earlier when the connection ends first, and only the second
 * is a departure. (The request's own 'close' fires once its body has been read, long before any answer.)
 */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController()
  const response = reply.raw
  if (response.destroyed || response.socket?.destroyed) {
    controller.abort()
  } else {
    response.once('close', () => {
      if (!response.writableFinished) controller.abort()
    })
  }
  return controller.signal
}
