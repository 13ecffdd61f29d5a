/** Image formats accepted, recognised by their first bytes only. */
export type ImageFormat = 'jpeg' | 'png' | 'gif' | 'webp'

export const ACCEPTED_FORMATS = 'jpg, png, gif, webp'

/** Bytes needed to recognise any accepted format (WebP: "RIFF" + 4-byte size + "WEBP"). */
export const SNIFF_BYTES = 12

const startsWith = (head: Uint8Array, bytes: number[], offset = 0) =>
  head.length >= offset + bytes.length && bytes.every((byte, i) => head[offset + i] === byte)

const ascii = (text: string) => Array.from(text, (c) => c.charCodeAt(0))

export function sniffImageFormat(head: Uint8Array): ImageFormat | undefined {
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'jpeg'
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png'
  if (startsWith(head, ascii('GIF87a')) || startsWith(head, ascii('GIF89a'))) return 'gif'
  if (startsWith(head, ascii('RIFF')) && startsWith(head, ascii('WEBP'), 8)) return 'webp'
  return undefined
}

/** What a refused resource looks like, for the message only ("content is image/svg+xml"). */
export function describeContent(head: Uint8Array): string {
  const text = new TextDecoder('utf-8', { fatal: false }).decode(head.subarray(0, 512)).trimStart().toLowerCase()
  if (head.length === 0) return 'empty'
  if (startsWith(head, ascii('%PDF'))) return 'application/pdf'
  if (startsWith(head, ascii('BM'))) return 'image/bmp'
  if (startsWith(head, ascii('ftypavif'), 4) || startsWith(head, ascii('ftypavis'), 4)) return 'image/avif'
  if (startsWith(head, ascii('ftypheic'), 4) || startsWith(head, ascii('ftypmif1'), 4)) return 'image/heic'
  if (startsWith(head, [0x00, 0x00, 0x01, 0x00])) return 'image/x-icon'
  if (startsWith(head, ascii('II*\0')) || startsWith(head, ascii('MM\0*'))) return 'image/tiff'
  if (text.startsWith('<svg') || (text.startsWith('<?xml') && text.includes('<svg'))) return 'image/svg+xml'
  if (text.startsWith('<!doctype html') || text.startsWith('<html')) return 'text/html'
  if (text.startsWith('{') || text.startsWith('[')) return 'application/json'
  return 'not a recognised image'
}
