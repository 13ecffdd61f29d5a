import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { test } from 'node:test'
import { builtModule, siblingModule } from '../src/start-worker.js'

// Which module a worker thread runs (start-worker.ts): a source module's build is its path under dist/ instead of src/.

test("a module under src/ is built to the same path under dist/, with .js for .ts, whatever lies above the checkout's src/", () => {
  assert.equal(builtModule(new URL('file:///work/main/src/db/sqlite-writer-worker.ts')).href, 'file:///work/main/dist/db/sqlite-writer-worker.js')
  assert.equal(builtModule(new URL('file:///home/src/app/src/worker.ts')).href, 'file:///home/src/app/dist/worker.js')
})

test('a module outside src/, or not a .ts file, has no build: refused rather than guessed', () => {
  assert.throws(() => builtModule(new URL('file:///work/main/test/worker.ts')), /is not a module under src\//)
  assert.throws(() => builtModule(new URL('file:///work/main/src/worker.js')), /is not a module under src\//)
})

test("the writer thread's module, from source, has a build that npm test's threads run", () => {
  const source = siblingModule(new URL('../src/db/sqlite-writer-thread.ts', import.meta.url).href, 'sqlite-writer-worker')
  assert.ok(existsSync(fileURLToPath(source)))
  // npm test builds before it runs (pretest); a file run alone may find no build, and needs none.
  if (process.env.WORKERS_FROM_BUILD === '1') assert.ok(existsSync(fileURLToPath(builtModule(source))))
})
