import { readFileSync, writeFileSync } from 'node:fs'
import { ConfigSchema } from '../src/config.js'

/**
 * The table of environment variables in docs/operations.md, written from the one config schema so it never drifts
 * from what the service accepts. `npm run docs:config` rewrites it in place; test/readme.test.ts fails when it is
 * stale.
 */

export const OPERATIONS = new URL('../docs/operations.md', import.meta.url)
const START = '<!-- config-table:start (npm run docs:config writes this table from src/config.ts) -->'
const END = '<!-- config-table:end -->'

type Field = { default?: string | number | boolean; description?: string }

export function configTable(): string {
  const rows = Object.entries(ConfigSchema.properties as Record<string, Field>).map(([name, field]) => {
    const fallback = field.default === undefined ? 'unset' : `\`${String(field.default)}\``
    return `| \`${name}\` | ${fallback} | ${field.description ?? ''} |`
  })
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n')
}

/** The document with its table replaced by the one the schema gives. */
export function withConfigTable(text: string): string {
  const start = text.indexOf(START)
  const end = text.indexOf(END)
  if (start < 0 || end < start) throw new Error(`docs/operations.md has no ${START} … ${END} block`)
  return `${text.slice(0, start + START.length)}\n${configTable()}\n${text.slice(end)}`
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  writeFileSync(OPERATIONS, withConfigTable(readFileSync(OPERATIONS, 'utf8')))
}
