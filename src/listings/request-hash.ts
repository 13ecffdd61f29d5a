import { createHash } from 'node:crypto'

/*
 * A create's fingerprint: a replay of its referenceId with the same fingerprint gets the original answer, a
 * different one is a conflict. It must not depend on the order of the request's keys, and it is stored with
 * the listing, so a stored fingerprint must stay readable by every later version of the service.
 */

/** Marks the current fingerprints; those stored before it had no mark (legacyRequestHash). */
const VERSION = 'v2:'

/**
 * `recordJson` (listingRecordJson) has its fields in a fixed order and holds the whole validated body. If it ever
 * changes for the same body, stored fingerprints stop matching: give the new text a new VERSION, keep this one readable.
 */
export function requestHash(recordJson: string): string {
  return VERSION + createHash('sha256').update(recordJson).digest('hex')
}

/** Whether a stored fingerprint is that of this request: `current` is requestHash's, `body` the validated body. */
export function sameRequest(stored: string, current: string, body: unknown): boolean {
  return stored.startsWith(VERSION) ? stored === current : stored === legacyRequestHash(body)
}

/**
 * The unversioned fingerprint: SHA-256 of the validated body (defaults filled) as JSON with every object's keys
 * sorted. Only a replay of a listing stored with one computes it.
 */
export function legacyRequestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex')
}

function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`
  const record = value as Record<string, unknown>
  const keys = Object.keys(record).sort() // UTF-16 code unit order, the same for every body
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`
}
