import assert from 'node:assert/strict'

/** One sample line of the Prometheus text format: `name{label="value",…} value`. */
export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

export interface Exposition {
  samples: Sample[]
  /** `# HELP` text by metric family. */
  help: Map<string, string>
  /** `# TYPE` by metric family. */
  type: Map<string, string>
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/
const ESCAPES: Record<string, string> = { '\\': '\\', '"': '"', n: '\n' }

/** Values as Prometheus reads them (Go's ParseFloat): NaN and Inf in any case; prom-client writes "Nan". */
function parseValue(text: string): number {
  if (/^nan$/i.test(text)) return NaN
  const infinite = /^([+-]?)inf(inity)?$/i.exec(text)
  if (infinite) return infinite[1] === '-' ? -Infinity : Infinity
  const value = Number(text)
  assert.ok(text !== '' && !Number.isNaN(value), `not a sample value: ${text}`)
  return value
}

/** Reads `{a="x",b="y"}` from the start of `rest`; returns the labels and what follows. */
function parseLabels(line: string, rest: string): [Record<string, string>, string] {
  const labels: Record<string, string> = {}
  if (!rest.startsWith('{')) return [labels, rest]
  let at = 1
  while (rest[at] !== '}') {
    const name = LABEL_NAME.exec(rest.slice(at))?.[0]
    assert.ok(name, `bad label name in: ${line}`)
    at += name.length
    assert.equal(rest.slice(at, at + 2), '="', `bad label in: ${line}`)
    at += 2
    let value = ''
    while (rest[at] !== '"') {
      assert.ok(at < rest.length, `unterminated label value in: ${line}`)
      if (rest[at] === '\\') {
        const escaped = ESCAPES[rest[at + 1] ?? '']
        assert.ok(escaped !== undefined, `bad escape in: ${line}`)
        value += escaped
        at += 2
      } else {
        value += rest.charAt(at)
        at += 1
      }
    }
    labels[name] = value
    at += 1
    if (rest[at] === ',') at += 1
  }
  return [labels, rest.slice(at + 1)]
}

/** Parses a whole exposition, failing on any line that is not a comment, a blank or a well-formed sample. */
export function parseExposition(text: string): Exposition {
  const exposition: Exposition = { samples: [], help: new Map(), type: new Map() }
  for (const line of text.split('\n')) {
    if (line === '') continue
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line)
    if (comment) {
      exposition[comment[1] === 'HELP' ? 'help' : 'type'].set(comment[2] as string, comment[3] as string)
      continue
    }
    if (line.startsWith('#')) continue
    const name = NAME.exec(line)?.[0]
    assert.ok(name, `not a sample: ${line}`)
    const [labels, rest] = parseLabels(line, line.slice(name.length))
    const [value, timestamp, extra] = rest.trim().split(/\s+/)
    assert.ok(value !== undefined && extra === undefined && (timestamp === undefined || /^-?\d+$/.test(timestamp)), `bad sample: ${line}`)
    exposition.samples.push({ name, labels, value: parseValue(value) })
  }
  return exposition
}

/** Samples named `name` whose labels include every one of `labels`. */
export function samplesOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): Sample[] {
  return exposition.samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
}

/** The value of the one sample named `name` with exactly `labels`; undefined when there is none. */
export function valueOf(exposition: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const matches = samplesOf(exposition, name, labels).filter((sample) => Object.keys(sample.labels).length === Object.keys(labels).length)
  assert.ok(matches.length <= 1, `${matches.length} samples of ${name} ${JSON.stringify(labels)}`)
  return matches[0]?.value
}
