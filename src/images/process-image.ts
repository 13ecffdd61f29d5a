import sharp from 'sharp'
import { invalidRequest, Problem } from '../errors.js'
import { FairSlots } from './fair-slots.js'
import type { ImageFormat } from './sniff.js'

// libvips' operation cache would keep decoded images after their upload: memory is bounded by the decodes in flight
// alone. One libvips thread per decode: the decodes in flight bound the threads, and the CPU, taken from requests.
sharp.cache(false)
sharp.concurrency(1)

export interface ProcessedImage {
  bytes: Buffer
  format: ImageFormat
  width: number
  height: number
}

export interface ImageLimits {
  /** IMAGE_MAX_PIXELS. */
  maxPixels: number
  /** IMAGE_MAX_EDGE. */
  maxEdge: number
}

const undecodable = (format: ImageFormat) => invalidRequest([{ pointer: '', detail: `is not a whole ${format} image: it cannot be decoded` }])

/**
 * The image as it is served: upright, at most maxEdge on its longer side, in its own format, re-encoded by libvips
 * (so nothing of the uploaded file but its pixels is kept: no EXIF, GPS, XMP, IPTC or comments). An animated image
 * becomes its first frame. The header is read first: a decompression bomb is refused before any pixel is decoded.
 */
export async function processImage(input: Buffer, format: ImageFormat, { maxPixels, maxEdge }: ImageLimits): Promise<ProcessedImage> {
  const header = await sharp(input, { limitInputPixels: false })
    .metadata()
    .catch(() => {
      throw undecodable(format)
    })
  const { width, height } = header
  if (header.format !== format) throw undecodable(format)
  if (width * height > maxPixels) {
    throw invalidRequest([{ pointer: '', detail: `is ${width} × ${height} pixels; at most ${maxPixels} pixels are accepted` }])
  }
  // failOn 'warning': a truncated or damaged file is refused, never served with grey where its pixels were missing.
  const { data, info } = await sharp(input, { limitInputPixels: maxPixels, failOn: 'warning' })
    .autoOrient()
    .resize({ width: maxEdge, height: maxEdge, fit: 'inside', withoutEnlargement: true })
    .toFormat(format)
    .toBuffer({ resolveWithObject: true })
    .catch(() => {
      throw undecodable(format)
    })
  return { bytes: data, format, width: info.width, height: info.height }
}

/** What every upload waits for: IMAGE_UPLOADS_IN_FLIGHT decodes at once, shared fairly between providers. */
export class DecodeSlots {
  readonly #slots: FairSlots
  /** Uploads held (reading, waiting or decoding): each holds its body, so this bounds their memory. */
  #held = 0
  readonly #maxHeld: number

  constructor(
    inFlight: number,
    /** The longest an upload waits for a slot (IMAGE_FETCH_TIMEOUT_MS). */
    private readonly waitMs: number,
    threadPool = Number(process.env.UV_THREADPOOL_SIZE) || 4,
  ) {
    // A decode holds one of libuv's threads throughout; one is always left for file reads, DNS and hashing.
    this.#slots = new FairSlots(Math.max(1, Math.min(inFlight, threadPool - 1)))
    this.#maxHeld = inFlight * 8
  }

  /** A place for one upload until `release`, or a 503 when too many are held already. */
  admit(): () => void {
    if (this.#held >= this.#maxHeld) throw this.#busy(`${this.#held} uploads are already being processed here`)
    this.#held += 1
    let released = false
    return () => {
      if (!released) this.#held -= 1
      released = true
    }
  }

  /** Runs `work` on a free slot of `owner`'s, or a 503 after waitMs. */
  run<T>(owner: string, work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        giveUp()
        reject(this.#busy(`no decoder was free within ${this.waitMs} ms`))
      }, this.waitMs)
      const giveUp = this.#slots.take(owner, () => {
        clearTimeout(timer)
        work()
          .then(resolve, reject)
          .finally(() => giveUp())
      })
    })
  }

  #busy(why: string): Problem {
    return new Problem('unavailable', `too many uploads at once: ${why}; retry after Retry-After seconds`, { headers: { 'retry-after': '1' } })
  }
}
