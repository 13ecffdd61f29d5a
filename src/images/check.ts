import type { CreateListingInput } from '../listings/schemas.js'

export interface ImageRef {
  /** JSON Pointer of the URL in the request body, e.g. `/items/4/imageUrl`. */
  pointer: string
  url: string
}

export interface ImageCheckOptions {
  /** Whose create it is: fetches are shared fairly between providers. */
  provider: string
  /**
   * A signal that aborts when the client has gone: its probes are given up unless another request shares them.
   * Asked for only when a probe must run: most creates name images already judged, and a signal per create costs.
   */
  clientGone?: () => AbortSignal
}

/** Checks every image of a listing before it is stored; throws a Problem when one fails (ImageProber.check). */
export type ImageCheck = (images: ImageRef[], options?: ImageCheckOptions) => Promise<void>

/** The images of a listing in document order: brand first, then items by index. */
export function listingImages(input: CreateListingInput): ImageRef[] {
  const images: ImageRef[] = [{ pointer: '/brand/imageUrl', url: input.brand.imageUrl }]
  input.items.forEach((item, index) => {
    if (item.imageUrl !== undefined) images.push({ pointer: `/items/${index}/imageUrl`, url: item.imageUrl })
  })
  return images
}
