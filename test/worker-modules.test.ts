import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { builtModule, siblingModule } from '../src/start-worker.js'

// Which module a worker thread runs (start-worker.ts): a module of this checkout's src/ has its build at the same
// path under dist/.

test('a module of src/ is built to the same path under dist/, with .js for .ts', () => {
  const source = new URL('../src/db/sqlite-writer-worker.ts', import.meta.url)
  assert.equal(builtModule(source).href, new URL('../dist/db/sqlite-writer-worker.js', import.meta.url).href)
  assert.equal(builtModule(new URL('../src/start-worker.ts', import.meta.url)).href, new URL('../dist/start-worker.js', import.meta.url).href)
})

test("a module outside this checkout's src/, or not a .ts file, has no build: refused rather than guessed", () => {
  for (const elsewhere of ['../test/worker.ts', '../src/worker.js', '../../other/src/db/sqlite-writer-worker.ts']) {
    assert.throws(() => builtModule(new URL(elsewhere, import.meta.url)), /is not a module of /)
  }
})

test("the writer thread's module, from source, has a build that npm test's threads run", () => {
  const source = siblingModule(new URL('../src/db/sqlite-writer-thread.ts', import.meta.url).href, 'sqlite-writer-worker')
  assert.ok(existsSync(fileURLToPath(source)))
  // npm test builds before it runs (pretest); a file run alone may find no build, and needs none.
  if (process.env.WORKERS_FROM_BUILD === '1') assert.ok(existsSync(fileURLToPath(builtModule(source))))
})
