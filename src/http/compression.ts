import zlib from 'node:zlib'
import compress from '@fastify/compress'
import { negotiate } from '@fastify/accept-negotiator'
import type { FastifyInstance, FastifyRequest } from 'fastify'

/**
 * docs/api.md#compression: responses of 1 KiB or more are compressed with br or gzip when Accept-Encoding allows, never
 * when it does not, with Vary: Accept-Encoding. @fastify/compress does it for every route registered after it,
 * bodies and streams alike (the /docs assets). The console's assets are compressed once when built, and sent as
 * negotiatedEncoding chooses, with the same negotiation as here.
 */

export const COMPRESSION_THRESHOLD_BYTES = 1024
/** Preferred first when the client accepts both equally: brotli is ~15–25% smaller on our JSON. */
export const ENCODINGS = ['br', 'gzip'] as const
export type Encoding = (typeof ENCODINGS)[number]

/**
 * Quality 4, as @fastify/compress chooses for brotli: zlib's default, 11, costs ~10× the CPU for a few percent
 * more (one page of 50 listings × 100 items took 230 ms at 11).
 */
const BROTLI_OPTIONS = { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }

const COMPRESSIBLE = /^(application\/(json|problem\+json|javascript)|text\/)/

/**
 * The longest Accept-Encoding negotiated. Browsers send a few dozen characters; a longer value is dropped before
 * @fastify/compress or negotiatedEncoding read it, so the answer is identity-coded (RFC 9110 §12.5.3 lets a server
 * send identity whatever the client asked for). Negotiating a value near Node's 16 KiB header limit costs far more
 * than the request it comes with.
 */
export const MAX_ACCEPT_ENCODING_LENGTH = 256

export async function registerCompression(app: FastifyInstance): Promise<void> {
  // Before the plugin's own hooks, and on the raw headers that both it and negotiatedEncoding read.
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.raw.headers['accept-encoding']
    if (header !== undefined && header.length > MAX_ACCEPT_ENCODING_LENGTH) delete request.raw.headers['accept-encoding']
    done()
  })
  await app.register(compress, {
    encodings: [...ENCODINGS],
    threshold: COMPRESSION_THRESHOLD_BYTES,
    brotliOptions: BROTLI_OPTIONS,
    // Request bodies stay as sent: a compressed body would be one more way to smuggle a large one past the
    // 1 MiB limit, and no client needs it.
    globalDecompression: false,
  })
  // The plugin adds Vary only to what it compresses. A response that could have been compressed varies by
  // Accept-Encoding even when this request's did not allow it, or a shared cache could hand it to one that does.
  app.addHook('onSend', (_request, reply, payload, done) => {
    const type = String(reply.getHeader('content-type') ?? '')
    const size = typeof payload === 'string' ? Buffer.byteLength(payload) : Buffer.isBuffer(payload) ? payload.length : 0
    if (size >= COMPRESSION_THRESHOLD_BYTES && COMPRESSIBLE.test(type) && !/accept-encoding/i.test(String(reply.getHeader('vary') ?? ''))) {
      reply.header('vary', reply.hasHeader('vary') ? `${String(reply.getHeader('vary'))}, accept-encoding` : 'accept-encoding')
    }
    done(null, payload)
  })
}

/** The encoding @fastify/compress would choose for this request: br or gzip, or none. */
export function negotiatedEncoding(request: FastifyRequest): Encoding | undefined {
  const header = request.headers['accept-encoding']
  if (header === undefined) return undefined
  // As the plugin reads it: case-insensitive; x-gzip, and `*` (no preference), are gzip.
  return negotiate(header.toLowerCase().replace(/\*|x-gzip/g, 'gzip'), [...ENCODINGS]) ?? undefined
}
