import { randomBytes } from 'node:crypto'

// Crockford's base32: no I, L, O, U, so ids survive being read aloud or typed by hand.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

function encodeBits(bytes: Uint8Array): string {
  let out = ''
  let buffer = 0
  let bits = 0
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte
    bits += 8
    while (bits >= 5) {
      bits -= 5
      out += ALPHABET[(buffer >>> bits) & 31]
    }
  }
  if (bits > 0) out += ALPHABET[(buffer << (5 - bits)) & 31]
  return out
}

/** 48-bit millisecond time as 10 characters, most significant first, so ids sort by time. */
function encodeTime(ms: number): string {
  let out = ''
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out
    ms = Math.floor(ms / 32)
  }
  return out
}

/**
 * A ULID (26 characters) whose 80 "random" bits start with `tick`, the count of earlier listings of the same
 * provider in the same millisecond. Within one provider, ids therefore sort exactly as listings were created,
 * which is what makes "creation time, then id, descending" the same order as the per-provider sequence.
 */
export function listingId(createdAtMs: number, tick: number): string {
  const bytes = randomBytes(10)
  bytes.writeUInt32BE(tick >>> 0, 0)
  return encodeTime(createdAtMs) + encodeBits(bytes)
}

/** An opaque, time-ordered id with a type prefix (`prv_…`, `tok_…`) that says what it names. */
export function prefixedId(prefix: string, nowMs: number): string {
  return `${prefix}_${encodeTime(nowMs)}${encodeBits(randomBytes(10))}`
}
