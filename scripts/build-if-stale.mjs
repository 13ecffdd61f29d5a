// npm runs `prepare` on every install, and npx's first run in a checkout installs the checkout into its cache:
// build only when a source is newer than the last build, so neither rebuilds an unchanged checkout.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const STAMP = 'dist/.built'
const INPUTS = ['src', 'console', 'package.json', 'tsconfig.json']

const newest = (path) =>
  statSync(path).isDirectory()
    ? Math.max(statSync(path).mtimeMs, ...readdirSync(path, { recursive: true }).map((entry) => statSync(join(path, entry)).mtimeMs))
    : statSync(path).mtimeMs

if (!existsSync(STAMP) || statSync(STAMP).mtimeMs < Math.max(...INPUTS.map(newest))) {
  execFileSync('npm', ['run', 'build'], { stdio: 'inherit' })
}
