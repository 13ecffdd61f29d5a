import { LogController, type FastifyReply, type FastifyRequest } from 'fastify'

/** One line per request, when it is answered. Headers are never logged, so neither is any token. */
export class AccessLog extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'requestId' })
  }

  override incomingRequest(): void {}

  override routeNotFound(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      providerId: request.provider?.id,
      marketplaceId: request.principal?.kind === 'marketplace' ? request.principal.marketplace.id : undefined,
      method: request.method,
      route: request.routeOptions.url ?? null,
      status: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
    }
    if (error) request.log.error({ ...line, err: error }, 'request failed')
    else request.log.info(line, 'request')
  }
}
