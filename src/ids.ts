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
      out += ALPHABET.charAt((buffer >>> bits) & 31)
    }
  }
  if (bits > 0) out += ALPHABET.charAt((buffer << (5 - bits)) & 31)
  return out
}

/** `value` (a non-negative integer below 2^53) as `digits` base-32 digits, most significant first. */
function encodeNumber(value: number, digits: number): string {
  let out = ''
  for (let i = 0; i < digits; i++) {
    out = ALPHABET.charAt(value % 32) + out
    value = Math.floor(value / 32)
  }
  return out
}

/** Digits of a listing id: creation millisecond, then `tick`, then randomness (10 + 7 + 9 = 26, a ULID's shape). */
const TIME_DIGITS = 10
const TICK_DIGITS = 7 // 35 bits: more listings in one millisecond than any provider can create
const RANDOM_DIGITS = 9 // 45 bits

/** 48-bit millisecond time as 10 characters, most significant first, so ids sort by time. */
const encodeTime = (ms: number) => encodeNumber(ms, TIME_DIGITS)

/** The random tail of a listing id. */
export function listingIdRandomPart(): string {
  return encodeBits(randomBytes(6)).slice(0, RANDOM_DIGITS)
}

/**
 * A listing id in a ULID's shape (26 Crockford base-32 characters): the creation millisecond, then `tick`, the
 * count of earlier listings of the same provider in that millisecond, then randomness. Within one provider,
 * ids therefore sort exactly as listings were created, which is what makes "creation time, then id,
 * descending" the same order as the per-provider sequence.
 */
export function listingId(createdAtMs: number, tick: number, random = listingIdRandomPart()): string {
  return encodeTime(createdAtMs) + encodeNumber(tick, TICK_DIGITS) + random
}

/** An opaque, time-ordered id with a type prefix (`prv_…`, `tok_…`) that says what it names. */
export function prefixedId(prefix: string, nowMs: number): string {
  return `${prefix}_${encodeTime(nowMs)}${encodeBits(randomBytes(10))}`
}
