import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { dereference } from '@readme/openapi-parser'
import { type ProblemType, problemTypes } from '../src/errors.js'
import { assertProblem } from './http-support.js'
import { Provocation, assertMatches, documentedService, onItsOwnService, operationsOf, provocations, provoke } from './openapi-support.js'

// GET /openapi.json (docs/api.md): every error a route answers with is documented for it, and nothing else is. The machinery is in openapi-support.ts.

/** Provocations on services of their own sent at once. */
const OWN_SERVICES_AT_ONCE = 5

describe('GET /openapi.json: problems', () => {
  const setup = documentedService()
  const { service } = setup

  test('documents, for each route, exactly the error statuses it answers with, each as a Problem', async () => {
    assert.deepEqual(Object.keys(provocations).sort(), Object.keys(problemTypes).sort())
    const { components } = await dereference(structuredClone(setup.document))
    const provoked = new Set<string>()
    const all = (Object.entries(provocations) as Array<[ProblemType, Provocation[]]>).flatMap(([type, list]) =>
      list.map((provocation) => ({ type, provocation })),
    )
    const provokeEach = async (queue: typeof all): Promise<void> => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const { type, provocation } = next
        const { status } = problemTypes[type]
        const response = await provoke(service, provocation)
        assertProblem(response, status, type)
        assertMatches(components.schemas.Problem, response.body, `${provocation.route} ${type}`)
        provoked.add(`${provocation.route} ${status} ${type}`)
      }
    }
    // Those on the file's service go one after another (some move its clock); those on a service of their own
    // go OWN_SERVICES_AT_ONCE at a time, since most of each is waiting (its service starting, a write waiting out
    // SQLite's busy_timeout): one after another they took minutes.
    const onTheirOwn = all.filter(({ provocation }) => onItsOwnService(provocation))
    const onTheFiles = all.filter(({ provocation }) => !onItsOwnService(provocation))
    await Promise.all([provokeEach(onTheFiles), ...Array.from({ length: OWN_SERVICES_AT_ONCE }, () => provokeEach(onTheirOwn))])
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
