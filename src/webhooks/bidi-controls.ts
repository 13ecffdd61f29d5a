/**
 * Characters that change the order text is shown in without being shown themselves. In a URL they make one
 * address read as another (`…/hook?\u202Emoc.knab` shows as `…/hook?bank.com`), so a webhook URL may not hold them.
 */
const BIDI_CONTROL = '[\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069]'

export const BIDI_CONTROLS_DETAIL =
  'must not contain bidirectional control characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069): they make a URL read as another'

export function hasBidiControls(text: string): boolean {
  return new RegExp(BIDI_CONTROL, 'u').test(text)
}

/** A URL as the console shows it: each such character percent-encoded, so that it shows and reorders nothing. */
export function visibleUrl(url: string): string {
  return url.replace(new RegExp(BIDI_CONTROL, 'gu'), (control) => encodeURIComponent(control))
}
