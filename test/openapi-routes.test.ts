import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { CREATE, LIST, documentedService, operationsOf, registeredRoutes } from './openapi-support.js'

// GET /openapi.json (docs/api.md): every route is in the document, with the security it has. The machinery is in openapi-support.ts.

describe('GET /openapi.json: routes', () => {
  const setup = documentedService()
  const { service } = setup

  test('describes every route but its own, /api/v1 ones with the bearer scheme; /openapi.json and /docs need no token', async () => {
    const documentation = / \/(openapi\.json|docs)(\/|$)/
    // The provider console's page, assets and session routes are the console's, not the API's (src/console).
    const consoleRoutes = / \/console(\/|\*|$)/
    const routes = registeredRoutes(service.app).filter((route) => !route.startsWith('HEAD ') && !documentation.test(route) && !consoleRoutes.test(route))
    // The route tree was read: the two API routes are among what it lists.
    assert.ok(routes.includes(CREATE) && routes.includes(LIST), routes.join('\n'))
    const scheme = setup.document.components.securitySchemes.bearerAuth
    assert.deepEqual({ type: scheme.type, scheme: scheme.scheme }, { type: 'http', scheme: 'bearer' })
    const documented = new Map(operationsOf(setup.document))
    for (const route of routes) {
      const operation = documented.get(route)
      assert.ok(operation, `${route} is not in the document`)
      const security = route.includes(' /api/v1/') ? [{ bearerAuth: [] }] : []
      assert.deepEqual(operation.security, security, route)
    }
    assert.ok(![...documented.keys()].some((route) => documentation.test(route)))
    assert.equal((await service.request('GET', '/docs')).status, 200)
  })
})
