import type { FastifyInstance } from 'fastify'
import { UNMATCHED_ROUTE, type Metrics } from '../metrics.js'

const EXAMPLE = `# HELP listing_http_requests_total HTTP requests answered, by method, route template ("unmatched" when no route matched) and status code.
# TYPE listing_http_requests_total counter
listing_http_requests_total{method="POST",route="/api/v1/listing/create",status="201"} 1042
listing_http_requests_total{method="GET",route="unmatched",status="404"} 3
`

/**
 * Counts and times every answered request, and serves GET /metrics. The onResponse hook sits on the root
 * context, so every route sees it, the 404 handlers included, whichever plugin registered them.
 */
export function registerMetrics(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onResponse', (request, reply, done) => {
    // The route template, never the URL: clients cannot add label values by inventing paths.
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE
    metrics.observeRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })

  app.get(
    '/metrics',
    {
      schema: {
        operationId: 'getMetrics',
        tags: ['operations'],
        security: [],
        summary: 'Prometheus metrics',
        description:
          'Prometheus text exposition (version 0.0.4): requests by method, route and status with latency histograms, ' +
          'image probes by outcome with latency, database query latency by operation, and process and Node.js metrics. ' +
          'No token is needed, like the health probes: restrict who can reach it at the network level (load balancer, ' +
          'network policy). Label values never hold URLs, provider ids or tokens.',
        // Only while the instance drains on shutdown: the metrics themselves need no database.
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
