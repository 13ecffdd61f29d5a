import { readFileSync, writeFileSync } from 'node:fs'
import { ConfigSchema } from '../src/config.js'

/**
 * The README's table of environment variables, written from the one config schema so it never drifts from what
 * the service accepts. `npm run docs:config` rewrites it in place; test/readme.test.ts fails when it is stale.
 */

export const README = new URL('../README.md', import.meta.url)
const START = '<!-- config-table:start (npm run docs:config writes this table from src/config.ts) -->'
const END = '<!-- config-table:end -->'

type Field = { default?: unknown; description?: string }

export function configTable(): string {
  const rows = Object.entries(ConfigSchema.properties as Record<string, Field>).map(([name, field]) => {
    const fallback = field.default === undefined ? 'unset' : `\`${String(field.default)}\``
    return `| \`${name}\` | ${fallback} | ${field.description ?? ''} |`
  })
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n')
}

/** The README with its table replaced by the one the schema gives. */
export function withConfigTable(readme: string): string {
  const start = readme.indexOf(START)
  const end = readme.indexOf(END)
  if (start < 0 || end < start) throw new Error(`README.md has no ${START} … ${END} block`)
  return `${readme.slice(0, start + START.length)}\n${configTable()}\n${readme.slice(end)}`
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  writeFileSync(README, withConfigTable(readFileSync(README, 'utf8')))
}
