import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { LRUCache } from 'lru-cache'
import { Type } from 'typebox'
import { Problem } from '../errors.js'
import { notModified } from '../http/conditional.js'
import { notModifiedResponse } from '../http/openapi.js'
import type { Clock } from '../clock.js'
import type { ImageStore, StoredImage } from './image-store.js'
import { parseImageFileName } from './uploads.js'

const EXAMPLE_FILE = 'img_q3Jx0N4v2b7sYc1WmT9kZp5A.jpg'
const EXAMPLE_ETAG = '"img_q3Jx0N4v2b7sYc1WmT9kZp5A"'

/** Served as the file it is, never interpreted: no sniffing into HTML, no script, no plugin, nothing it could load. */
const IMAGE_HEADERS = {
  'cache-control': 'public, max-age=31536000, immutable',
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; sandbox",
}

const headerDocs = {
  ETag: { type: 'string', description: 'Strong; the image never changes under its url.', examples: [EXAMPLE_ETAG] },
  'Cache-Control': { type: 'string', examples: [IMAGE_HEADERS['cache-control']] },
}

const imageContent = Object.fromEntries(
  ['image/jpeg', 'image/png', 'image/webp', 'image/gif'].map((type) => [type, { schema: { type: 'string', contentMediaType: type }, example: '(the image)' }]),
)

/**
 * Images never change under their name, so the small ones asked often (a brand's logo on every listing) are kept
 * in memory a while: a minute, so an image removed as unused is gone from every instance soon after.
 */
const CACHED_BYTES = 256 * 1024
const CACHE_ENTRIES = 128
const CACHE_TTL_MS = 60_000

/** GET and HEAD /images/{file}: uploaded images, public, from the store or, when small and asked recently, from memory. */
export const serveImageRoutes: FastifyPluginAsyncTypebox<{ store: ImageStore; clock: Clock }> = async (app, { store, clock }) => {
  const recent = new LRUCache<string, Buffer>({ max: CACHE_ENTRIES, ttl: CACHE_TTL_MS, ttlResolution: 0, perf: { now: clock } })
  const read = async (file: string): Promise<StoredImage | undefined> => {
    const cached = recent.get(file)
    if (cached) return { body: cached, bytes: cached.length }
    const stored = await store.get(file)
    if (stored && Buffer.isBuffer(stored.body) && stored.bytes <= CACHED_BYTES) recent.set(file, stored.body)
    return stored
  }
  const schema = {
    operationId: 'getImage',
    tags: ['images'],
    summary: 'An uploaded image',
    security: [],
    description:
      'The url an upload answered with; no token. Immutable: cache it for as long as you like. A removed image, or a file name that ' +
      'names no image (another extension included), is `404`.',
    params: Type.Object({ file: Type.String({ description: 'The image’s id and its extension.', examples: [EXAMPLE_FILE] }) }),
    headers: Type.Object({
      'if-none-match': Type.Optional(
        Type.String({ description: 'The ETag you hold: `304` if it is this image’s.', examples: ['"img_an0therImageS3enB4xYzA1"'] }),
      ),
    }),
    response: {
      200: { description: 'The image, as stored.', headers: headerDocs, content: imageContent },
      304: notModifiedResponse(EXAMPLE_ETAG),
    },
    'x-problems': ['not-found', 'internal'],
  } as const
  // HEAD declared, not derived from GET: Fastify's derived HEAD would give the length of an empty body. Documented once, as GET.
  for (const method of ['GET', 'HEAD'] as const) {
    app.route({
      method,
      url: '/images/:file',
      exposeHeadRoute: false,
      schema: method === 'GET' ? schema : { ...schema, hide: true },
      handler: async (request, reply) => {
        const image = parseImageFileName(request.params.file)
        const missing = () => new Problem('not-found', 'no image has this name', { errors: [{ parameter: 'file', detail: 'names no image' }] })
        if (!image) throw missing()
        const etag = `"${image.id}"`
        const conditional = notModified(request.headers['if-none-match'], etag)
        const found =
          conditional || request.method === 'HEAD'
            ? (recent.get(request.params.file)?.length ?? (await store.size(request.params.file)))
            : await read(request.params.file)
        if (found === undefined) throw missing()
        reply.headers(IMAGE_HEADERS).header('etag', etag).type(`image/${image.format}`)
        if (conditional) return reply.code(304).send()
        if (typeof found === 'number') return reply.header('content-length', found).send('')
        return reply.header('content-length', found.bytes).send(found.body)
      },
    })
  }
}
