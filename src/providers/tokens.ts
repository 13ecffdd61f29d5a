import { createHash, randomBytes } from 'node:crypto'

/** The prefix lets secret scanners recognise a leaked token. */
const PREFIX = 'lst_'
const SHAPE = /^lst_[A-Za-z0-9_-]{43}$/

/** A new bearer token (32 random bytes) and the hash that is all the database ever stores. */
export function generateToken(): { token: string; hash: string } {
  const token = PREFIX + randomBytes(32).toString('base64url')
  return { token, hash: hashToken(token) }
}

/**
 * SHA-256 without salt or stretching is right here: a token has 256 bits of entropy, so there is nothing to
 * guess, and the lookup must stay one indexed equality.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** Tokens of the wrong shape are refused without a database lookup. */
export function isWellFormedToken(token: string): boolean {
  return SHAPE.test(token)
}
