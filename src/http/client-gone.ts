import type { FastifyReply } from 'fastify'

/**
 * Aborts when the client goes away before its answer is sent. The response's 'close' fires after the answer or
 * when the connection ends first; the request's own 'close' fires once its body is read, so it says nothing.
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
