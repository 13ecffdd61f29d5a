import { createHash } from 'node:crypto'

/**
 * JSON with object keys sorted at every level, so two bodies that differ only in key order are equal.
 * Written as plain loops: on a 100-item body the first version (entries, sort, map, join) was 10% of a create.
 */
function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value)
  if (Array.isArray(value)) {
    let out = '['
    for (let i = 0; i < value.length; i++) out += (i > 0 ? ',' : '') + canonicalJson(value[i])
    return `${out}]`
  }
  const keys = Object.keys(value).sort() // UTF-16 code unit order, the same for every body
  let out = '{'
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string
    out += `${i > 0 ? ',' : ''}${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`
  }
  return `${out}}`
}

/**
 * Fingerprint of a validated create body (defaults already filled): a replay with the same fingerprint gets the
 * original answer, a different one under the same referenceId is a conflict.
 */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex')
}
