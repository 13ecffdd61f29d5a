/**
 * What the API's request schemas mean beyond JSON Schema, shared by the service's Ajv (validation.ts) and the
 * console's validators, which console/build.ts generates from the same schemas: the string formats, exact decimal
 * places, and the field an error is about. Nothing here may need Node: the console runs it in the browser.
 */

// NUL cannot be stored in PostgreSQL text, and either database would replace a lone surrogate by U+FFFD: both are
// refused, so that what is stored is what was sent.
// eslint-disable-next-line no-control-regex -- NUL is what this pattern exists to find.
export const UNSTORABLE = /[\u0000\uD800-\uDFFF]/u

export interface StringFormat {
  validate: (value: string) => boolean
  /** The sentence a provider reads when it fails. */
  message: (value: string) => string
}

/** The formats of request bodies, each with the sentence a provider reads when it fails. */
export const bodyFormats: Record<string, StringFormat> = {
  text: {
    validate: (value) => !UNSTORABLE.test(value),
    message: () => 'must be valid Unicode text without NUL characters',
  },
  'display-name': {
    validate: (value) => /\S/u.test(value) && !UNSTORABLE.test(value),
    message: (value) => (/\S/u.test(value) ? 'must be valid Unicode text without NUL characters' : 'must contain a non-whitespace character'),
  },
  'http-url': {
    validate: isHttpUrl,
    message: () => 'must be an absolute http or https URL without a user name or password',
  },
}

function isHttpUrl(value: string): boolean {
  // Parsed once, not URL.canParse and again: image URLs are a create's costliest format checks.
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return false
  }
  // Credentials would be sent to whoever the URL points at.
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && url.username === '' && url.password === ''
}

/** Decimal places of a number as JavaScript prints it (its shortest round-trip form). */
export function decimalPlaces(value: number): number {
  if (Number.isInteger(value)) return 0
  const text = String(value)
  if (!text.includes('e')) return text.length - text.indexOf('.') - 1
  const [mantissa = '', exponent = '0'] = text.split('e')
  const fraction = mantissa.split('.')[1] ?? ''
  return Math.max(0, fraction.length - Number(exponent))
}

function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1')
}

/** The place an Ajv error is about, as a JSON Pointer: a missing or unknown member is the member's own place. */
export function errorPointer(error: { instancePath: string; keyword: string; params: Record<string, unknown> }): string {
  if (error.keyword === 'required') return `${error.instancePath}/${escapePointerToken(String(error.params.missingProperty))}`
  if (error.keyword === 'additionalProperties') return `${error.instancePath}/${escapePointerToken(String(error.params.additionalProperty))}`
  return error.instancePath
}
