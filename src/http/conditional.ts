/**
 * Entity tags in conditional request headers (RFC 9110 §8.8.3, §13.1): `If-Match` on changes, `If-None-Match` on
 * reads. Both are `*` or a comma-separated list of entity tags, each `"opaque"` or `W/"opaque"`.
 */

export interface EntityTag {
  weak: boolean
  /** With its quotes, as the ETag header carries it: `"3"`. */
  opaque: string
}

export type EntityTagList = { any: true } | { any: false; tags: EntityTag[] }

/**
 * The longest If-Match / If-None-Match value read: room for dozens of this service's ETags. Longer lists are
 * refused (400 naming the header) rather than parsed: no client needs them, and the bound keeps the cost of a
 * hostile value as small as that of an ordinary one.
 */
export const MAX_ENTITY_TAGS_LENGTH = 1024

const isOws = (code: number) => code === 0x20 || code === 0x09
// etagc is %x21 / %x23-7E / obs-text: visible ASCII but `"`, and bytes from 0x80 (here: code points 0x80–0xFF,
// as Node hands header bytes over as latin1).
const isEtagc = (code: number) => code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff)

/**
 * The header's tags, or undefined when it is not `*` nor a list of entity tags, or is over
 * MAX_ENTITY_TAGS_LENGTH. Empty list elements are allowed. Scanned once, left to right, each character looked at
 * once: a comma may be inside a tag, so the list cannot be split, and a regular expression with optional parts
 * between runs of whitespace backtracks (one space more costs a whole scan more).
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

/**
 * `If-Match` compares strongly (RFC 9110 §13.1.1): a weak tag never matches. What the write scripts receive:
 * `*`, or the opaque parts that could match.
 */
export function ifMatchTags(list: EntityTagList): { any: boolean; tags: string[] } {
  return list.any ? { any: true, tags: [] } : { any: false, tags: list.tags.filter((tag) => !tag.weak).map((tag) => tag.opaque) }
}

/**
 * Whether `If-None-Match` names the current representation, so the answer is 304 Not Modified, by weak comparison (RFC 9110 §13.1.2): `*`, or any
 * tag whose opaque part is the ETag's, weak or not. The validator has already checked the header's shape.
 */
export function notModified(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  const list = parseEntityTags(header)
  if (!list) return false
  if (list.any) return true
  const opaque = etag.startsWith('W/') ? etag.slice(2) : etag
  return list.tags.some((tag) => tag.opaque === opaque)
}
