import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import { UNMATCHED_ROUTE, type Metrics } from '../metrics.js'

const EXAMPLE = `# HELP listing_http_requests_total HTTP requests answered, by method, route template ("unmatched" when no route matched) and status code.
# TYPE listing_http_requests_total counter
listing_http_requests_total{method="POST",route="/api/v1/listing/create",status="201"} 1042
listing_http_requests_total{method="GET",route="unmatched",status="404"} 3
`

/**
 * Counts and times every answered request (on the root context, so the 404 handlers too), and serves GET /metrics
 * unless METRICS_PORT gives it a port of its own (metricsListener).
 */
export function registerMetrics(app: FastifyInstance, metrics: Metrics, options: { route: boolean }): void {
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE
    metrics.observeRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
  if (!options.route) return

  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'getMetrics',
        tags: ['operations'],
        security: [],
        summary: 'Prometheus metrics',
        description:
          'Prometheus text exposition (version 0.0.4): requests by method, route and status with latency histograms, image probes by outcome with latency, ' +
          'database query latency by operation, and process and Node.js metrics. No token is needed, like the health probes: restrict who can reach it at ' +
          'the network level (load balancer, network policy). Label values never hold URLs, provider ids or tokens.',
        // Only while draining: the metrics need no database.
        'x-problems': ['unavailable'],
        response: {
          200: {
            description: 'Every metric, in the Prometheus text format.',
            content: { 'text/plain': { schema: { type: 'string' }, examples: { excerpt: { value: EXAMPLE } } } },
          },
        },
      },
    },
    async (_request, reply) => {
      const { contentType, text } = await metrics.exposition()
      return reply.type(contentType).send(text)
    },
  )
}

/** METRICS_PORT: GET /metrics alone on a port of its own, which an operator can keep off the port clients reach. */
export async function metricsListener(metrics: Metrics, port: number, host: string): Promise<{ address: string; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0]
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: only GET /metrics is served here\n')
      return
    }
    metrics.exposition().then(
      ({ contentType, text }) => response.writeHead(200, { 'content-type': contentType }).end(request.method === 'HEAD' ? undefined : text),
      () => response.writeHead(500).end(),
    )
  })
  // Slow clients do not hold sockets.
  server.headersTimeout = 10_000
  server.requestTimeout = 10_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  const bound = server.address() as AddressInfo
  const shown = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address
  return {
    address: `http://${shown}:${bound.port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
