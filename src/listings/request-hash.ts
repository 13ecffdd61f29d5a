import { createHash } from 'node:crypto'

/** JSON with object keys sorted at every level, so two bodies that differ only in key order are equal. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/**
 * Fingerprint of a validated create body (defaults already filled): a replay with the same fingerprint gets the
 * original answer, a different one under the same referenceId is a conflict.
 */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex')
}
