// npm runs `prepare` on every install, and npx's first run in a checkout installs the checkout into its cache:
// build only when a source is newer than the last build, so neither rebuilds an unchanged checkout.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const STAMP = 'dist/.built'
const INPUTS = ['src', 'console', 'package.json', 'tsconfig.json']

// A directory's own time changes when a file in it is deleted or renamed.
const mtimes = (path) =>
  [path, ...(statSync(path).isDirectory() ? readdirSync(path, { recursive: true }).map((entry) => join(path, entry)) : [])].map((p) => statSync(p).mtimeMs)

if (!existsSync(STAMP) || statSync(STAMP).mtimeMs < Math.max(...INPUTS.flatMap(mtimes))) {
  execFileSync('npm', ['run', 'build'], { stdio: 'inherit' })
}
