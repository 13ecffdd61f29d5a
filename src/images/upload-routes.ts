import { randomBytes } from 'node:crypto'
import type { Readable } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from 'typebox'
import type { Clock } from '../clock.js'
import { isUniqueViolation } from '../db/dialect.js'
import { Problem } from '../errors.js'
import { named } from '../http/components.js'
import { jsonResponse } from '../http/openapi.js'
import { providerOf } from '../providers/authenticate.js'
import type { ImageStore } from './image-store.js'
import { processImage, type DecodeSlots, type ImageLimits } from './process-image.js'
import { ACCEPTED_FORMATS, describeContent, sniffImageFormat, SNIFF_BYTES, type ImageFormat } from './sniff.js'
import { imageFileName, type UploadRow, type Uploads } from './uploads.js'

export const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/webp', 'image/gif']

const UploadedImage = named(
  'UploadedImage',
  Type.Object(
    {
      id: Type.String({ description: '`img_` and 24 random characters.' }),
      url: Type.String({ description: 'Where the image is served, without a token; give it as `imageUrl` in a listing.' }),
      format: Type.Enum(['jpeg', 'png', 'webp', 'gif'], { description: 'What the content is; the url ends in .jpg, .png, .webp or .gif.' }),
      bytes: Type.Integer({ description: 'Size of the image as served, which may be smaller than what was uploaded.' }),
      width: Type.Integer({ description: 'In pixels, upright, at most IMAGE_MAX_EDGE.' }),
      height: Type.Integer({ description: 'In pixels, upright, at most IMAGE_MAX_EDGE.' }),
    },
    { additionalProperties: false },
  ),
)

const exampleUploaded = {
  id: 'img_q3Jx0N4v2b7sYc1WmT9kZp5A',
  url: 'https://listings.example.com/images/img_q3Jx0N4v2b7sYc1WmT9kZp5A.jpg',
  format: 'jpeg',
  bytes: 412408,
  width: 2048,
  height: 1536,
}

const LOCATION = { Location: { type: 'string', description: 'The image’s url, as in the body.', examples: [exampleUploaded.url] } }

const MiB = 1024 * 1024
const tooLarge = (maxBytes: number) => {
  const limit = maxBytes % MiB === 0 ? `${maxBytes / MiB} MiB` : `${maxBytes} bytes`
  return new Problem('image-too-large', `image is larger than ${limit}, the limit`, { errors: [{ pointer: '', detail: `is larger than ${limit}` }] })
}

/**
 * Reads an upload up to maxBytes and no further: a declared length over it is refused unread, a body that grows
 * past it is refused at that point, and one that does not start as an accepted image at its first bytes.
 */
function readImageBody(payload: Readable, declaredLength: string | undefined, maxBytes: number): Promise<{ bytes: Buffer; format: ImageFormat }> {
  const declared = declaredLength === undefined ? undefined : Number(declaredLength)
  if (declared !== undefined && declared > maxBytes) return Promise.reject(tooLarge(maxBytes))
  return new Promise((resolve, reject) => {
    // Into one buffer of the declared size: collected and then joined, a body would be held twice for a moment.
    let body = Buffer.allocUnsafe(declared ?? 64 * 1024)
    let length = 0
    let format: ImageFormat | undefined
    // Nothing more is kept; what still arrives is dropped until the connection closes after the answer.
    const stop = (problem: Problem) => {
      payload.removeAllListeners('data')
      payload.removeAllListeners('end')
      reject(problem)
    }
    const judge = () => {
      const head = body.subarray(0, Math.min(length, SNIFF_BYTES))
      format = sniffImageFormat(head)
      if (format) return true
      const detail = `content is ${describeContent(body.subarray(0, Math.min(length, 512)))}; accepted: ${ACCEPTED_FORMATS}`
      stop(new Problem('unsupported-image-format', detail, { errors: [{ pointer: '', detail }] }))
      return false
    }
    payload.on('data', (chunk: Buffer) => {
      if (length + chunk.length > maxBytes) {
        stop(tooLarge(maxBytes))
        return
      }
      if (length + chunk.length > body.length) body = Buffer.concat([body.subarray(0, length)], Math.min(maxBytes, 2 * (length + chunk.length)))
      chunk.copy(body, length)
      length += chunk.length
      if (format === undefined && length >= SNIFF_BYTES) judge()
    })
    payload.once('error', reject)
    payload.once('end', () => {
      if (format !== undefined || judge()) resolve({ bytes: body.subarray(0, length), format: format as ImageFormat })
    })
  })
}

export interface UploadRoutesOptions {
  uploads: Uploads
  store: ImageStore
  slots: DecodeSlots
  limits: ImageLimits & { maxBytes: number }
  clock: Clock
  /** Where this service is reached: PUBLIC_BASE_URL, or http://HOST:PORT. */
  baseUrl: () => string
}

/** POST /api/v1/images: a provider's photo, stored as it will be served. */
export const uploadRoutes: FastifyPluginAsyncTypebox<UploadRoutesOptions> = async (app, { uploads, store, slots, limits, clock, baseUrl }) => {
  // In this scope only the image types are read, and only as far as IMAGE_MAX_BYTES: JSON is not an image.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(IMAGE_MEDIA_TYPES, (request, payload, done) => {
    readImageBody(payload, request.headers['content-length'], limits.maxBytes).then(
      (body) => done(null, body),
      (error: unknown) => done(error as Error, undefined),
    )
  })
  app.addContentTypeParser('*', (_request, _payload, done) => done(mediaTypeProblem(), undefined))

  const answer = (row: UploadRow) => {
    const url = `${baseUrl()}/images/${imageFileName(row)}`
    return { id: row.id, url, format: row.format, bytes: row.bytes, width: row.width, height: row.height }
  }

  app.post(
    '/images',
    {
      schema: {
        operationId: 'uploadImage',
        tags: ['images'],
        summary: 'Upload a photo',
        description:
          'The body is the image itself (at most IMAGE_MAX_BYTES), not JSON. Its content decides its format. What is stored is what is ' +
          'served: upright, without metadata (no EXIF, GPS position, XMP, IPTC or comments), at most IMAGE_MAX_EDGE pixels on its longer side, ' +
          'in its own format; an animated GIF or WebP keeps its first frame. The same bytes uploaded again answer the same image. An image no ' +
          'listing names is removed IMAGE_UNUSED_DAYS after its last upload.',
        response: {
          200: jsonResponse('You uploaded these bytes before: the same image, kept as long as a new upload.', UploadedImage, { again: exampleUploaded }),
          201: jsonResponse('The image is stored; its url serves it at once.', UploadedImage, { uploaded: exampleUploaded }, LOCATION),
        },
        'x-problems': ['invalid-request', 'image-too-large', 'unsupported-media-type', 'unsupported-image-format', 'internal', 'unavailable'],
        // Documentation only: in OpenAPI 3.1 an empty schema is a body of bytes, and it validates whatever the parser read.
        body: { content: Object.fromEntries(IMAGE_MEDIA_TYPES.map((type) => [type, { schema: { description: 'The image file’s bytes.' } }])) },
      },
      // Held from before the body is read to the answer: uploads over the bound are refused unread.
      preParsing: async (_request, reply) => {
        reply.raw.once('close', slots.admit())
      },
    },
    async (request, reply) => {
      const provider = providerOf(request)
      // No body and no Content-Type: no parser ran, so there is no body at all.
      const { bytes, format } = (request.body ?? {}) as { bytes?: Buffer; format?: ImageFormat }
      if (!bytes || !format) throw mediaTypeProblem()
      const uploadHash = Buffer.from(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)).toString('hex')
      const nowMs = clock()
      const earlier = await uploads.reuse(provider.id, uploadHash, nowMs)
      if (earlier) return reply.code(200).send(answer(earlier))
      const image = await slots.run(provider.id, () => processImage(bytes, format, limits))
      const row: UploadRow = {
        provider_id: provider.id,
        id: `img_${randomBytes(18).toString('base64url')}`,
        upload_hash: uploadHash,
        format,
        bytes: image.bytes.length,
        width: image.width,
        height: image.height,
        created_at_ms: nowMs,
        last_used_ms: nowMs,
        listed_at_ms: null,
      }
      await store.put(imageFileName(row), image.bytes, `image/${format}`)
      try {
        await uploads.insert(row)
      } catch (error) {
        // The same bytes uploaded at once, and the other upload was stored first: its image is the answer.
        const winner = isUniqueViolation(error) ? await uploads.reuse(provider.id, uploadHash, nowMs) : undefined
        await store.delete(imageFileName(row))
        if (!winner) throw error
        return reply.code(200).send(answer(winner))
      }
      const body = answer(row)
      return reply.code(201).header('location', body.url).send(body)
    },
  )
}

function mediaTypeProblem(): Problem {
  const detail = `must be one of ${IMAGE_MEDIA_TYPES.join(', ')}`
  return new Problem('unsupported-media-type', `Content-Type ${detail}`, { errors: [{ header: 'Content-Type', detail }] })
}
