/* If-Match and If-None-Match (RFC 9110): `*` or a comma-separated list of entity tags, `"opaque"` or `W/"opaque"`. */

interface EntityTag {
  weak: boolean
  /** With its quotes: `"3"`. */
  opaque: string
}

type EntityTagList = { any: true } | { any: false; tags: EntityTag[] }

/** Room for dozens of this service's ETags; a longer value is refused rather than parsed, so a hostile one costs little. */
export const MAX_ENTITY_TAGS_LENGTH = 1024

const isOws = (code: number) => code === 0x20 || code === 0x09
// etagc: visible ASCII but `"`, and obs-text (Node hands header bytes over as latin1).
const isEtagc = (code: number) => code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff)

/**
 * The header's tags, or undefined when it is none, or too long. Scanned once, left to right: a comma may be inside
 * a tag, so the list cannot be split, and a regular expression with optional whitespace would backtrack.
 */
export function parseEntityTags(value: string): EntityTagList | undefined {
  if (value.length > MAX_ENTITY_TAGS_LENGTH) return undefined
  const end = value.length
  let at = 0
  const skipOws = () => {
    while (at < end && isOws(value.charCodeAt(at))) at += 1
  }
  skipOws()
  if (value[at] === '*') {
    at += 1
    skipOws()
    return at === end ? { any: true } : undefined
  }
  const tags: EntityTag[] = []
  while (at < end) {
    if (value[at] === ',') {
      at += 1
      skipOws()
      continue
    }
    const weak = value.startsWith('W/', at)
    if (weak) at += 2
    if (value[at] !== '"') return undefined
    const start = at
    at += 1
    while (at < end && isEtagc(value.charCodeAt(at))) at += 1
    if (value[at] !== '"') return undefined
    at += 1
    tags.push({ weak, opaque: value.slice(start, at) })
    skipOws()
    if (at < end && value[at] !== ',') return undefined
  }
  return tags.length > 0 ? { any: false, tags } : undefined
}

/** `If-Match` compares strongly: a weak tag never matches. The write scripts receive `*` or the opaque parts that could. */
export function ifMatchTags(list: EntityTagList): { any: boolean; tags: string[] } {
  return list.any ? { any: true, tags: [] } : { any: false, tags: list.tags.filter((tag) => !tag.weak).map((tag) => tag.opaque) }
}

/** Whether `If-None-Match` names the current representation (304), by weak comparison. */
export function notModified(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  const list = parseEntityTags(header)
  if (!list) return false
  if (list.any) return true
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag
  return list.tags.some((tag) => tag.opaque === opaque)
}

/** `If-Match`, parsed: `*`, or the opaque parts of its strong entity tags. */
export interface IfMatch {
  any: boolean
  tags: string[]
}

/** Whether `If-Match` stops the change: it names neither `*` nor the current version. */
export function preconditionFails(ifMatch: IfMatch | null, version: number): boolean {
  return ifMatch !== null && !ifMatch.any && !ifMatch.tags.includes(`"${version}"`)
}

/** An `If-Match` header as the validator let it through (format entity-tags), parsed; null when absent. */
export function ifMatchOf(header: string | undefined): IfMatch | null {
  if (header === undefined) return null
  const parsed = parseEntityTags(header)
  return parsed ? ifMatchTags(parsed) : null
}
