import zlib from 'node:zlib'
import compress from '@fastify/compress'
import type { FastifyInstance } from 'fastify'

/* @fastify/compress covers only routes registered after it; the console's prebuilt assets are @fastify/static's. */

const COMPRESSION_THRESHOLD_BYTES = 1024
/** Brotli first when the client accepts both equally: it is the smaller. */
const ENCODINGS = ['br', 'gzip'] as const

/** As @fastify/compress chooses: zlib's default Brotli quality costs far more CPU for little gain. */
const BROTLI_OPTIONS = { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }

const COMPRESSIBLE = /^(application\/(json|problem\+json|javascript)|text\/)/

/** A longer Accept-Encoding is dropped (identity is always allowed): negotiating a huge value costs more than the request. */
const MAX_ACCEPT_ENCODING_LENGTH = 256

export async function registerCompression(app: FastifyInstance): Promise<void> {
  // Before the plugin's own hooks, and on the raw headers it reads.
  app.addHook('onRequest', (request, _reply, done) => {
    const header = request.raw.headers['accept-encoding']
    if (header !== undefined && header.length > MAX_ACCEPT_ENCODING_LENGTH) delete request.raw.headers['accept-encoding']
    done()
  })
  await app.register(compress, {
    encodings: [...ENCODINGS],
    threshold: COMPRESSION_THRESHOLD_BYTES,
    brotliOptions: BROTLI_OPTIONS,
    // A compressed request body would be one more way past the body limit, and no client needs it.
    globalDecompression: false,
  })
  // The plugin adds Vary only to what it compresses; a response that could have been compressed varies too, or a
  // shared cache could hand it to a client that accepts compression.
  app.addHook('onSend', (_request, reply, payload, done) => {
    const vary = reply.getHeader('vary')
    if (vary === undefined || !/accept-encoding/i.test(String(vary))) {
      const type = String(reply.getHeader('content-type') ?? '')
      if (COMPRESSIBLE.test(type) && atLeastThreshold(payload))
        reply.header('vary', vary === undefined ? 'accept-encoding' : `${String(vary)}, accept-encoding`)
    }
    done(null, payload)
  })
}

/** A string has at least as many UTF-8 bytes as UTF-16 units, so its length is a cheap first test. */
function atLeastThreshold(payload: unknown): boolean {
  if (typeof payload === 'string') return payload.length >= COMPRESSION_THRESHOLD_BYTES || Buffer.byteLength(payload) >= COMPRESSION_THRESHOLD_BYTES
  return Buffer.isBuffer(payload) && payload.length >= COMPRESSION_THRESHOLD_BYTES
}
