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

/** A suggestion for a URL-safe name from an English name: "Butter croissant" → "butter-croissant". */
export function webNameOf(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9._~]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100)
}

/** A fresh referenceId: unique enough that two forms never share one, fixed for the form so a double submit is one listing. */
export function newReference(): string {
  const random = crypto.getRandomValues(new Uint32Array(2))
  return `console-${Date.now().toString(36)}-${Array.from(random, (n) => n.toString(36)).join('')}`
}
