import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, test } from 'node:test'
import { compileErrors, validate } from '@readme/openapi-parser'
import { documentedService, operationsOf } from './openapi-support.js'

// GET /openapi.json (docs/api.md): the document is valid OpenAPI 3.1: an OpenAPI parser and Redocly's recommended rules find no error. The machinery is in openapi-support.ts.

describe('GET /openapi.json: valid', () => {
  const setup = documentedService()

  test('is OpenAPI 3.1 that an OpenAPI parser validates, with info, servers, summaries and descriptions', async () => {
    assert.equal(setup.document.openapi, '3.1.0')
    const result = await validate(structuredClone(setup.document))
    assert.ok(result.valid, compileErrors(result))
    assert.ok(setup.document.info.description.length > 0)
    assert.ok(setup.document.servers.length > 0)
    for (const [route, operation] of operationsOf(setup.document)) {
      assert.ok(operation.summary, `${route} has no summary`)
      assert.ok(operation.description, `${route} has no description`)
      assert.ok(operation.operationId, `${route} has no operationId`)
    }
  })

  test("Redocly's recommended ruleset reports no error", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'))
    try {
      const file = join(dir, 'openapi.json')
      writeFileSync(file, JSON.stringify(setup.document, null, 2))
      // Offline and quiet: no usage telemetry, no update check.
      const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' }
      const args = ['--no-install', 'redocly', 'lint', file, '--extends', 'recommended', '--format', 'json']
      // redocly exits non-zero when it finds errors; its JSON report on stdout says which.
      const { stdout } = await promisify(execFile)('npx', args, { env, timeout: 60_000 }).catch((error: unknown) => error as { stdout: string })
      const report = JSON.parse(stdout)
      const errors = report.problems.filter((problem: { severity: string }) => problem.severity === 'error')
      assert.equal(report.totals.errors, 0, JSON.stringify(errors, null, 2))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
