import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { README, withConfigTable } from '../scripts/config-table.js'

test('the README lists every configuration variable as the config schema defines it (npm run docs:config)', () => {
  const readme = readFileSync(README, 'utf8')
  assert.equal(readme, withConfigTable(readme), 'README.md is stale: run npm run docs:config')
})
