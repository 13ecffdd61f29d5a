import type { DoneFuncWithErrOrRes, FastifyReply, FastifyRequest } from 'fastify'

/**
 * An answer to an authenticated request is that client's own (its listings, a webhook's signing secret, the
 * console's session): no shared or browser cache keeps it. Routes that revalidate with an entity tag set
 * `private, no-cache` themselves, and keep it.
 */
export function noStoreWhenAuthenticated(request: FastifyRequest, reply: FastifyReply, payload: unknown, done: DoneFuncWithErrOrRes): void {
  if (request.principal !== null && !reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store')
  done(null, payload)
}
