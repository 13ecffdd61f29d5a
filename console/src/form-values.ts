/** Turning what was typed into API values, so that the schema check and the service judge what was meant. */

const NUMBER_TEXT = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/

/**
 * A number field's value: a number when the text is one, else the text itself (so the schema reports "must be a
 * number" at its pointer), undefined when empty (so a required field reports "is required").
 */
export function numberOf(text: string): number | string | undefined {
  const trimmed = text.trim()
  if (trimmed === '') return undefined
  return NUMBER_TEXT.test(trimmed) ? Number(trimmed) : trimmed
}

/** A percentage (10–100) as the API's rate (0.1–1), without binary noise: 33.3 → 0.333, not 0.33299999999999996. */
export function rateOf(percentText: string): number | string | undefined {
  const percent = numberOf(percentText)
  return typeof percent === 'number' ? Number((percent / 100).toPrecision(12)) : percent
}

/** A rate (0.1–1) as the percentage shown. */
export function percentOf(rate: number): string {
  return String(Number((rate * 100).toPrecision(12)))
}

const WEB_NAME_MAX = 100

/** Letters without their accents ("café" → "cafe"), so that a derived or typed web name keeps them. */
const unaccented = (text: string) => text.normalize('NFKD').replace(/[\u0300-\u036f]/g, '')

/** A URL-safe name derived from an English name: "Morning Bakery" → "morning-bakery" (RFC 3986 unreserved only). */
export function webNameOf(name: string): string {
  return unaccented(name)
    .toLowerCase()
    .replace(/[^a-z0-9._~]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, WEB_NAME_MAX)
    .replace(/-+$/, '')
}

/**
 * What is typed into a web name field, made acceptable as it is typed, so that nobody is stuck on a refused
 * character: a space becomes "-", accents go, anything else outside RFC 3986's unreserved characters is dropped.
 */
export function webNameTyped(text: string): string {
  return unaccented(text)
    .replace(/\s/g, '-')
    .replace(/[^A-Za-z0-9._~-]/g, '')
    .slice(0, WEB_NAME_MAX)
}

/** A fresh referenceId: unique enough that two forms never share one, fixed for the form so a double submit is one listing. */
export function newReference(): string {
  const random = crypto.getRandomValues(new Uint32Array(2))
  return `console-${Date.now().toString(36)}-${Array.from(random, (n) => n.toString(36)).join('')}`
}
