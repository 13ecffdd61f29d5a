import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { OPERATIONS, withConfigTable } from '../scripts/config-table.js'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

test('docs/operations.md lists every configuration variable as the config schema defines it (npm run docs:config)', () => {
  const operations = readFileSync(OPERATIONS, 'utf8')
  assert.equal(operations, withConfigTable(operations), 'docs/operations.md is stale: run npm run docs:config')
})

test('the README stays a landing page: at most 15 KB', () => {
  const size = statSync(join(ROOT, 'README.md')).size
  assert.ok(size <= 15_000, `README.md is ${size} bytes; move detail into docs/`)
})

/** README.md, bench/README.md and every Markdown file under docs/. */
function documents(): string[] {
  const files = ['README.md', join('bench', 'README.md')]
  const walk = (folder: string) => {
    for (const entry of readdirSync(join(ROOT, folder), { withFileTypes: true })) {
      const path = join(folder, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md')) files.push(path)
    }
  }
  walk('docs')
  return files
}

/** The text outside fenced code blocks and inline code, where a link is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '')
}

/** The anchors GitHub gives a document's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>()
  const result = new Set<string>()
  for (const match of prose(markdown).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = (match[1] ?? '')
      .replace(/`/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    result.add(count === 0 ? base : `${base}-${count}`)
  }
  return result
}

test('every relative link in README.md and docs/ points to a file that exists (and a heading that exists)', () => {
  const broken: string[] = []
  for (const file of documents()) {
    const text = readFileSync(join(ROOT, file), 'utf8')
    for (const match of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1] ?? ''
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // https:, mailto:
      const [path = '', anchor] = target.split('#', 2)
      const absolute = path === '' ? join(ROOT, file) : resolve(ROOT, dirname(file), decodeURIComponent(path))
      if (!absolute.startsWith(ROOT) || !existsSync(absolute)) {
        broken.push(`${file}: ${target} (no such file)`)
        continue
      }
      if (anchor !== undefined && absolute.endsWith('.md') && !anchors(readFileSync(absolute, 'utf8')).has(anchor)) {
        broken.push(`${file}: ${target} (no such heading in ${relative(ROOT, absolute)})`)
      }
    }
  }
  assert.deepEqual(broken, [])
})
