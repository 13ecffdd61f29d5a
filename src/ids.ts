import { randomBytes } from 'node:crypto'

/** Random bytes drawn a few kilobytes at a time: each randomBytes call is a trip to the system's generator. */
let pool = Buffer.alloc(0)
let used = 0
function randomPart(bytes: number): Uint8Array {
  if (used + bytes > pool.length) {
    pool = randomBytes(4096)
    used = 0
  }
  used += bytes
  return pool.subarray(used - bytes, used)
}

// Crockford's base32: no I, L, O, U, so ids survive being read aloud or typed by hand.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

/** The shape of every listing id (listingId() below): anything else cannot name a listing, and is not looked up. */
export const LISTING_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/

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

/** Digits of a listing id: 26, a ULID's shape. The tick's 35 bits are more listings a millisecond than any provider makes. */
const TIME_DIGITS = 10
const TICK_DIGITS = 7
const RANDOM_DIGITS = 9

/** Most significant first, so ids sort by time. */
const encodeTime = (ms: number) => encodeNumber(ms, TIME_DIGITS)

export function listingIdRandomPart(): string {
  return encodeBits(randomPart(6)).slice(0, RANDOM_DIGITS)
}

/**
 * The creation millisecond, then `tick` (the provider's earlier listings in that millisecond), then randomness:
 * within a provider ids sort as listings were created, so "creation time, then id" is the sequence's order.
 */
export function listingId(createdAtMs: number, tick: number, random = listingIdRandomPart()): string {
  return encodeTime(createdAtMs) + encodeNumber(tick, TICK_DIGITS) + random
}

/**
 * listingId() as SQL over expressions for the millisecond, the tick and the random part (PostgreSQL: a create is one
 * statement there, and these come from the provider's counter under its lock). Each digit is the base-32 digit of
 * `(value >> 5k) & 31`, most significant first; test/ids.test.ts checks it against listingId().
 */
export function listingIdSql(createdAtMs: string, tick: string, random: string): string {
  const digits = (value: string, count: number) =>
    Array.from({ length: count }, (_, i) => `substr('${ALPHABET}', cast(((${value}) >> ${5 * (count - 1 - i)}) & 31 as integer) + 1, 1)`)
  return [...digits(createdAtMs, TIME_DIGITS), ...digits(tick, TICK_DIGITS), random].join(' || ')
}

/** An opaque, time-ordered id with a type prefix (`prv_…`, `tok_…`) that says what it names. */
export function prefixedId(prefix: string, nowMs: number): string {
  return `${prefix}_${encodeTime(nowMs)}${encodeBits(randomPart(10))}`
}
