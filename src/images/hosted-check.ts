import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import { publicBaseUrl } from '../console/sign-in-link.js'
import { Problem, type ProblemDetail } from '../errors.js'
import type { ImageCheck, ImageRef } from './check.js'
import { imageFileName, type Uploads } from './uploads.js'

/** Where this service is reached, by its own urls: PUBLIC_BASE_URL, else http://HOST:PORT with the port it listens on. */
export function serviceAddress(config: Pick<Config, 'PUBLIC_BASE_URL' | 'HOST' | 'PORT'>, listeningPort: () => number | undefined) {
  // Asked of the socket until it listens, then kept: a listening port does not change, and asking is a system call
  // on every create.
  let listening: { own: string; origins: string[] } | undefined
  const address = () => {
    if (listening) return listening
    const port = listeningPort()
    const own = publicBaseUrl({ ...config, PUBLIC_BASE_URL: undefined, PORT: port ?? config.PORT })
    const origins = [own, ...(config.PUBLIC_BASE_URL === undefined ? [] : [publicBaseUrl(config)])].map((url) => new URL(url).origin)
    if (port !== undefined) listening = { own, origins }
    return { own, origins }
  }
  return {
    baseUrl: () => (config.PUBLIC_BASE_URL === undefined ? address().own : publicBaseUrl(config)),
    /** Both, as origins: an image url under either is one of ours. */
    origins: () => address().origins,
  }
}

/** The file a url names when it is an image url of this service (one of `origins`, under /images/), else undefined. */
export function hostedFile(url: string, origins: readonly string[]): string | undefined {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return undefined
  }
  if (!origins.includes(parsed.origin) || !parsed.pathname.startsWith('/images/')) return undefined
  return parsed.pathname.slice('/images/'.length)
}

const NOT_YOURS = 'no image you uploaded has this url'

const idOf = (file: string) => file.split('.')[0] as string

/**
 * The create's image check, with this service's own image urls judged by looking them up: never fetched, so they
 * work whatever the address policy and whatever proxy stands in front. A provider names only its own uploads:
 * another's url is as unknown as one never issued. Every other url goes to `fetched`, with all its defences.
 * Once every image is accepted, the uploads named are marked as kept by a listing.
 */
export function withHostedImages(fetched: ImageCheck, uploads: Uploads, origins: () => string[], clock: Clock): ImageCheck {
  return async (images, options = { provider: '' }) => {
    const own = origins()
    const hosted = new Map<ImageRef, string>()
    for (const image of images) {
      const file = hostedFile(image.url, own)
      if (file !== undefined) hosted.set(image, file)
    }
    if (hosted.size === 0) return fetched(images, options)
    const others = images.filter((image) => !hosted.has(image))
    const [known, fetchFailure] = await Promise.all([
      uploads.find(options.provider, [...new Set([...hosted.values()].map(idOf))]),
      others.length === 0
        ? undefined
        : fetched(others, options).then(
            () => undefined,
            (error: unknown) => error as Error,
          ),
    ])
    // A failure that names no image (a full backlog) answers for the whole create.
    if (fetchFailure !== undefined && !(fetchFailure instanceof Problem && fetchFailure.errors)) throw fetchFailure
    const byFile = new Map(known.map((row) => [imageFileName(row), row]))
    let missing = [...hosted].filter(([, file]) => !byFile.has(file)).map(([image]) => image)
    if (missing.length === 0 && fetchFailure === undefined) {
      const unlisted = known.filter((row) => row.listed_at_ms === null).map((row) => row.id)
      const kept = unlisted.length === 0 ? [] : await uploads.markListed(options.provider, unlisted, clock())
      // One removed as unused between the look-up and the mark is as unknown as any other.
      const gone = new Set(unlisted.filter((id) => !kept.includes(id)))
      missing = [...hosted].filter(([, file]) => gone.has(idOf(file))).map(([image]) => image)
      if (missing.length === 0) return
    }
    // In document order: the first failing image sets the status, errors[] names every one.
    const fetchDetails = new Map((fetchFailure?.errors ?? []).map((error) => [error.pointer, error.detail]))
    const errors: ProblemDetail[] = []
    let first: Problem['type'] | undefined
    for (const image of images) {
      const detail = missing.includes(image) ? NOT_YOURS : fetchDetails.get(image.pointer)
      if (detail === undefined) continue
      errors.push({ pointer: image.pointer, detail })
      first ??= missing.includes(image) ? 'image-unavailable' : fetchFailure?.type
    }
    throw new Problem(first ?? 'image-unavailable', errors.length === 1 ? (errors[0] as ProblemDetail).detail : `${errors.length} images were not accepted`, {
      errors,
    })
  }
}
