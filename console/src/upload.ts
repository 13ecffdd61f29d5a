import { CSRF_HEADER, sessionEnded } from './api'

/** What the service answers for a stored photo (`POST /api/v1/images`). */
export interface HostedImage {
  id: string
  url: string
  format: string
  bytes: number
  width: number
  height: number
}

export type UploadOutcome = { image: HostedImage } | { refused: string } | { status: number } | { offline: true }

/**
 * Sends a photo's bytes to the service as they are, with the session cookie and the anti-CSRF header (as every
 * console call). XMLHttpRequest rather than fetch: only it reports how much of the body has been sent.
 * `onProgress` gets the fraction sent, then undefined while the service checks and stores the photo.
 */
export function uploadPhoto(file: File, onProgress: (sent: number | undefined) => void, signal: AbortSignal): Promise<UploadOutcome> {
  return new Promise((resolve) => {
    const request = new XMLHttpRequest()
    request.open('POST', '/api/v1/images')
    for (const [name, value] of Object.entries(CSRF_HEADER)) request.setRequestHeader(name, value)
    // The service decides the format from the bytes; a type it does not take is its 415 to tell.
    request.setRequestHeader('content-type', file.type || 'application/octet-stream')
    request.upload.onprogress = (event) => onProgress(event.lengthComputable && event.loaded < event.total ? event.loaded / event.total : undefined)
    request.upload.onload = () => onProgress(undefined)
    request.onerror = () => resolve({ offline: true })
    request.onabort = () => resolve({ offline: true })
    request.onload = () => {
      if (request.status === 401) sessionEnded()
      let body: unknown
      try {
        body = JSON.parse(request.responseText)
      } catch {
        body = undefined
      }
      if ((request.status === 200 || request.status === 201) && typeof (body as HostedImage | undefined)?.url === 'string') {
        resolve({ image: body as HostedImage })
        return
      }
      const detail = (body as { detail?: unknown } | undefined)?.detail
      resolve(typeof detail === 'string' && detail !== '' ? { refused: detail } : { status: request.status })
    }
    signal.addEventListener('abort', () => request.abort())
    request.send(file)
  })
}
