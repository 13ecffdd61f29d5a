import { crc32 } from 'node:zlib'
import sharp from 'sharp'
import type { ImageFormat } from '../src/images/sniff.js'

/*
 * Image files made by the tests, as a phone or an editor would write them: EXIF with a GPS position and an
 * orientation, XMP, comments; each format; broken and hostile ones. Nothing is read from disk.
 */

export const SECRET_COMMENT = 'taken at home, 12 Secret Street'
export const XMP_MARKER = 'photoshop:City="Secretville"'

const XMP = `<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
<rdf:Description rdf:about="" xmlns:photoshop="http://ns.adobe.com/photoshop/1.0/" ${XMP_MARKER}/></rdf:RDF></x:xmpmeta>`

/** A JPEG comment (COM segment) right after the start of image. */
export function withJpegComment(jpeg: Buffer, text: string): Buffer {
  const comment = Buffer.from(text, 'latin1')
  const segment = Buffer.alloc(4)
  segment.writeUInt16BE(0xfffe, 0)
  segment.writeUInt16BE(comment.length + 2, 2)
  return Buffer.concat([jpeg.subarray(0, 2), segment, comment, jpeg.subarray(2)])
}

/** A PNG chunk with its length and CRC. */
function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data])
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(body))
  return Buffer.concat([length, body, crc])
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** A tEXt chunk (`Comment`) right after IHDR, which is always the first chunk and 25 bytes long. */
export function withPngComment(png: Buffer, text: string): Buffer {
  const at = PNG_SIGNATURE.length + 25
  return Buffer.concat([png.subarray(0, at), pngChunk('tEXt', Buffer.from(`Comment\0${text}`, 'latin1')), png.subarray(at)])
}

/** A few hundred bytes whose header declares width × height RGB pixels: a decompression bomb by its header alone. */
export function pngBomb(width: number, height: number): Buffer {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 2, 0, 0, 0], 8)
  // A few zero rows, deflated: what follows the header hardly matters, it must never be decoded.
  const idat = Buffer.from([0x78, 0x9c, 0x63, 0x60, 0x18, 0x05, 0x00, 0x00, 0x00, 0x00, 0x01])
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', header), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))])
}

/** A picture worth keeping apart from its metadata: a gradient, so rotation and scaling show. */
function picture(width: number, height: number) {
  const channels = 3
  const pixels = Buffer.alloc(width * height * channels)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const at = (y * width + x) * channels
      pixels[at] = Math.floor((255 * x) / width)
      pixels[at + 1] = Math.floor((255 * y) / height)
      pixels[at + 2] = 96
    }
  }
  return sharp(pixels, { raw: { width, height, channels } })
}

/**
 * A phone's photo: a JPEG stored sideways (EXIF orientation 6: show it turned 90° clockwise), with the camera's
 * EXIF (a GPS position among it), XMP and a comment.
 */
export async function phonePhoto(width = 640, height = 480): Promise<Buffer> {
  const jpeg = await picture(width, height)
    .jpeg({ quality: 90 })
    .withExif({
      IFD0: { Make: 'PhoneMaker', Model: 'Phone 12' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '24/1 42/1 4900/100', GPSLongitudeRef: 'E', GPSLongitude: '46/1 40/1 3100/100' },
    })
    .withMetadata({ orientation: 6 })
    .withXmp(XMP)
    .toBuffer()
  return withJpegComment(jpeg, SECRET_COMMENT)
}

/** An image of `format` with XMP (and a PNG its comment); a GIF with two frames. */
export async function imageOf(format: ImageFormat, width = 320, height = 200): Promise<Buffer> {
  if (format === 'jpeg') return phonePhoto(width, height)
  if (format === 'gif') {
    const frames = Buffer.concat([await picture(width, height).raw().toBuffer(), await picture(width, height).negate().raw().toBuffer()])
    return sharp(frames, { raw: { width, height: height * 2, channels: 3, pageHeight: height } })
      .gif({ loop: 0, delay: [200, 200] })
      .toBuffer()
  }
  const encoded = await picture(width, height).toFormat(format).withXmp(XMP).toBuffer()
  return format === 'png' ? withPngComment(encoded, SECRET_COMMENT) : encoded
}

/** What a file says of itself beyond its pixels, as sharp reads it. */
export async function metadataOf(bytes: Buffer) {
  const { exif, xmp, iptc, comments, orientation, width, height, pages, format } = await sharp(bytes, { limitInputPixels: false }).metadata()
  // The GPSInfo tag (0x8825) in either byte order: IFD0's pointer to the GPS position.
  const gps = exif !== undefined && (exif.includes(Buffer.from([0x88, 0x25])) || exif.includes(Buffer.from([0x25, 0x88])))
  return { exif, gps, xmp, iptc, comments, orientation, width, height, pages, format }
}
