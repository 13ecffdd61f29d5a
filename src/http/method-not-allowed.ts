import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify'
import { Problem } from '../errors.js'

/** A route's path as a test of concrete paths: `:name` is one non-empty segment, `*` anything. */
function pathMatcher(url: string): RegExp {
  const pattern = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/')
  return new RegExp(`^${pattern}$`)
}

/**
 * A path that exists with other methods only is 405 with Allow, not 404: `GET /api/v1/listing/create` is the
 * create route with the wrong method, not a listing called "create". Collects the routes registered after it and
 * returns the onRequest hook; under `/api/v1` it runs after authentication.
 */
export function answerWrongMethods(app: FastifyInstance): onRequestAsyncHookHandler {
  // A path without parameters has its own methods, whatever a pattern also matches.
  const literal = new Map<string, Set<string>>()
  const patterns: Array<{ matches: RegExp; methods: Set<string> }> = []
  app.addHook('onRoute', (route) => {
    const methods = [route.method].flat().map((method) => method.toUpperCase())
    const url = route.url
    if (!url.includes(':') && !url.includes('*')) {
      const known = literal.get(url) ?? new Set<string>()
      methods.forEach((method) => known.add(method))
      literal.set(url, known)
    } else {
      patterns.push({ matches: pathMatcher(url), methods: new Set(methods) })
    }
  })
  return async (request, reply) => {
    const path = request.url.split('?')[0] as string
    const known = literal.get(path)
    // A pattern route matched this method, and the path is not a literal route's: nothing to look up.
    if (!request.is404 && known === undefined) return
    const allowed = new Set(known)
    if (allowed.size === 0) for (const route of patterns) if (route.matches.test(path)) route.methods.forEach((method) => allowed.add(method))
    if (allowed.size === 0 || allowed.has(request.method)) return
    if (allowed.has('GET')) allowed.add('HEAD')
    if (request.method === 'HEAD' && allowed.has('GET')) return
    const allow = [...allowed].sort().join(', ')
    reply.header('allow', allow)
    throw new Problem('method-not-allowed', `${request.method} is not a method of ${path}; it has ${allow}`)
  }
}
