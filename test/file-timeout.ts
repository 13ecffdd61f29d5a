/**
 * Loaded into every test file's process (package.json: `--import ./test/file-timeout.ts`): Node's test runner
 * bounds tests, not files, so a file kept alive by something nobody closed (a server, a loop) would hang the
 * suite. The timer is unref'd: it never keeps a file alive, and ends one that outlives the bound.
 */
import { basename } from 'node:path'

const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 8 * 60_000)

// Only in a test file's own process: the runner that starts them loads this too, and must outlive them all.
if (process.env.NODE_TEST_CONTEXT !== undefined) {
  setTimeout(() => {
    process.stderr.write(`\n!!!!! ${basename(process.argv[1] ?? 'a test file')} ran past ${FILE_TIMEOUT_MS} ms: ended !!!!!\n`)
    process.exit(1)
  }, FILE_TIMEOUT_MS).unref()
}
