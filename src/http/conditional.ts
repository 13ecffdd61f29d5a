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

// etagc is %x21 / %x23-7E / obs-text: visible ASCII but `"`, and bytes from 0x80 (here: code points 0x80–0xFF,
// as Node hands header bytes over as latin1). A comma may be inside a tag, so the list is scanned, not split.
const ELEMENT = /[ \t]*(?:(W\/)?("[\x21\x23-\x7E\x80-\xFF]*"))?[ \t]*(,|$)/y

/** The header's tags, or undefined when it is not `*` nor a list of entity tags. Empty list elements are allowed. */
export function parseEntityTags(value: string): EntityTagList | undefined {
  if (/^[ \t]*\*[ \t]*$/.test(value)) return { any: true }
  const tags: EntityTag[] = []
  ELEMENT.lastIndex = 0
  while (ELEMENT.lastIndex < value.length) {
    const match = ELEMENT.exec(value)
    if (!match) return undefined
    if (match[2] !== undefined) tags.push({ weak: match[1] !== undefined, opaque: match[2] })
    else if (match[1] !== undefined) return undefined
    if (match[3] === '') break
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
