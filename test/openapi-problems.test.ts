import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { dereference } from '@readme/openapi-parser'
import { type ProblemType, problemTypes } from '../src/errors.js'
import { assertProblem } from './http-support.js'
import { Provocation, assertMatches, documentedService, operationsOf, provocations, provoke } from './openapi-support.js'

// GET /openapi.json (docs/api.md): every error a route answers with is documented for it, and nothing else is. The machinery is in openapi-support.ts.

describe('GET /openapi.json: problems', () => {
  const setup = documentedService()
  const { service } = setup

  test('documents, for each route, exactly the error statuses it answers with, each as a Problem', async () => {
    assert.deepEqual(Object.keys(provocations).sort(), Object.keys(problemTypes).sort())
    const { components } = await dereference(structuredClone(setup.document))
    const provoked = new Set<string>()
    for (const [type, list] of Object.entries(provocations) as Array<[ProblemType, Provocation[]]>) {
      const { status } = problemTypes[type]
      for (const provocation of list) {
        const response = await provoke(service, provocation)
        assertProblem(response, status, type)
        assertMatches(components.schemas.Problem, response.body, `${provocation.route} ${type}`)
        provoked.add(`${provocation.route} ${status} ${type}`)
      }
    }
    const documented = new Set<string>()
    for (const [route, operation] of operationsOf(setup.document)) {
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        const problem = response.content?.['application/problem+json']
        if (Number(status) < 400) {
          assert.equal(problem, undefined, `${route} ${status}`)
          continue
        }
        assert.ok(problem, `${route} ${status} is not application/problem+json`)
        assert.deepEqual(problem.schema, { $ref: '#/components/schemas/Problem' }, `${route} ${status}`)
        for (const name of Object.keys(problem.examples)) documented.add(`${route} ${status} ${name}`)
      }
    }
    const undocumented = [...provoked].filter((answer) => !documented.has(answer))
    const neverAnswered = [...documented].filter((answer) => !provoked.has(answer))
    assert.deepEqual({ undocumented, neverAnswered }, { undocumented: [], neverAnswered: [] })
  })
})
