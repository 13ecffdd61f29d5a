import { AssertionError } from 'node:assert'
import { dereference } from '@readme/openapi-parser'
import type { ValidateFunction } from 'ajv'
import type { FastifyInstance } from 'fastify'
import { createAjv } from '../src/http/validation.js'
import type { Response } from './helper.js'

/**
 * Issue 6's "validating proxy": every response a test receives through the helper's client is checked against
 * the OpenAPI document the service itself serves, so the whole suite fails on any answer (status, media type or
 * body) the document does not describe. Prism would do this as a real proxy, but it needs Node 24; checking in
 * the client sees exactly the same bytes without a second hop.
 */

// The document is walked generically; `any` keeps that readable.
type Document = any

const NOT_DOCUMENTED = /^\/docs(\/|$)|^\/openapi\.json$/

/**
 * A path no route serves is 404; under /api/v1 the scope's hooks run first (the document's description says so),
 * so such a request can also be refused as a route would be: no valid token, over the rate limit, no database.
 */
function undocumentedStatuses(path: string): number[] {
  return path === '/api/v1' || path.startsWith('/api/v1/') ? [401, 404, 405, 429, 503] : [404, 405]
}

/** A documented path as a pattern: `/api/v1/listing/{listingId}` matches any one segment where the parameter is. */
function pathPattern(template: string): RegExp {
  const escaped = template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')
  return new RegExp(`^${escaped}$`)
}

const loadedByDocument = new Map<string, Promise<ResponseConformance>>()

export class ResponseConformance {
  readonly #document: Document
  readonly #templates: Array<[template: string, pattern: RegExp]>
  // The service's own Ajv: the same custom formats and the exact multipleOf its validator uses.
  readonly #ajv = createAjv()
  readonly #validators = new Map<string, ValidateFunction>()

  private constructor(document: Document) {
    this.#document = document
    this.#templates = Object.keys(document.paths ?? {})
      .filter((template) => template.includes('{'))
      .map((template) => [template, pathPattern(template)])
  }

  /** The document's path item for a request path: its own, or the template it fills (static paths win, as in routing). */
  #pathItem(path: string): any {
    const exact = this.#document.paths?.[path]
    if (exact) return exact
    const template = this.#templates.find(([, pattern]) => pattern.test(path))?.[0]
    return template === undefined ? undefined : this.#document.paths[template]
  }

  /**
   * The document GET /openapi.json serves (its handler returns app.swagger()), read without a request so that
   * tests counting requests (metrics, rate limits) count only their own. One checker per document in a process:
   * a file that starts many services (most with the same document) compiles each schema once, not once per service.
   */
  static load(app: FastifyInstance): Promise<ResponseConformance> {
    const document = app.swagger()
    const text = JSON.stringify(document)
    let loaded = loadedByDocument.get(text)
    if (!loaded) loadedByDocument.set(text, (loaded = dereference(structuredClone(document)).then((doc) => new ResponseConformance(doc))))
    return loaded
  }

  /** Throws an AssertionError naming the request when the document does not describe `response`. */
  check(method: string, url: string, response: Response): void {
    const path = url.split('?')[0] as string
    if (method === 'HEAD' || NOT_DOCUMENTED.test(path)) return
    const context = `${method} ${url} → ${response.status} ${response.text.slice(0, 300)}`
    const operation = this.#pathItem(path)?.[method.toLowerCase()]
    if (!operation) {
      // No route serves it: a generic answer with a Problem body.
      const allowed = undocumentedStatuses(path)
      this.#expect(allowed.includes(response.status), `no documented operation, yet the answer is not ${allowed.join('/')}: ${context}`)
      this.#matches('Problem', this.#document.components.schemas.Problem, response, context)
      return
    }
    const documented = operation.responses?.[String(response.status)] ?? operation.responses?.default
    this.#expect(documented !== undefined, `status ${response.status} is not documented: ${context}`)
    if (documented.content === undefined) {
      // A response documented without content (304) has none.
      this.#expect(response.text === '', `a body where the document says there is none: ${context}`)
      return
    }
    const mediaType = (response.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? ''
    const media = documented.content?.[mediaType]
    this.#expect(media !== undefined, `media type "${mediaType}" is not documented: ${context}`)
    if (mediaType.endsWith('json')) {
      this.#matches(`${method} ${path} ${response.status} ${mediaType}`, media.schema, response, context)
    }
  }

  #matches(key: string, schema: object, response: Response, context: string): void {
    let validate = this.#validators.get(key)
    if (!validate) this.#validators.set(key, (validate = this.#ajv.compile(schema)))
    // Ajv fills defaults in what it validates: check a copy.
    const valid = validate(structuredClone(response.body))
    this.#expect(valid, `the body does not match the documented schema (${this.#ajv.errorsText(validate.errors)}): ${context}`)
  }

  #expect(condition: boolean, message: string): asserts condition {
    if (!condition) throw new AssertionError({ message: `OpenAPI conformance: ${message}` })
  }
}
