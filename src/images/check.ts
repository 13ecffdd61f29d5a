import type { CreateListingInput } from '../listings/schemas.js'

export interface ImageRef {
  /** JSON Pointer of the URL in the request body, e.g. `/items/4/imageUrl`. */
  pointer: string
  url: string
}

export interface ImageCheckOptions {
  /** Whose create it is: the process's fetches are shared fairly between providers, and each one's backlog is bounded. */
  provider: string
  /** Aborts when the create's client has gone: its probes are given up, unless another request shares them. */
  signal?: AbortSignal
}

/**
 * Checks every image a listing names before it is stored, and throws a Problem (400 image-unavailable, 413,
 * 415; 429 when the provider's creates already wait on too many images) when one fails. The create path awaits
 * exactly this, after validation and the referenceId check; ImageProber.check is the implementation. Without
 * options the images are checked for an anonymous provider that never goes away.
 */
export type ImageCheck = (images: ImageRef[], options?: ImageCheckOptions) => Promise<void>

/** The images of a listing in document order: brand first, then items by index. */
export function listingImages(input: CreateListingInput): ImageRef[] {
  const images: ImageRef[] = [{ pointer: '/brand/imageUrl', url: input.brand.imageUrl }]
  input.items.forEach((item, index) => {
    if (item.imageUrl !== undefined) images.push({ pointer: `/items/${index}/imageUrl`, url: item.imageUrl })
  })
  return images
}
