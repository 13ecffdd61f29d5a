import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** Real tiny files (made with ImageMagick and cwebp), one per format the tests need. */
const file = (name: string) => readFileSync(new URL(`./images/${name}`, import.meta.url))
export const IMAGES = {
  png: file('tiny.png'),
  jpeg: file('tiny.jpg'),
  gif: file('tiny.gif'),
  webp: file('tiny.webp'),
  bmp: file('tiny.bmp'),
  tiff: file('tiny.tiff'),
  avif: file('tiny.avif'),
  svg: file('tiny.svg'),
  pdf: file('tiny.pdf'),
  html: file('page.html'),
}

export interface RecordedRequest {
  method: string
  path: string
  range: string | undefined
  /** The answer is over: sent whole, or its connection closed before that (the client gave up). */
  closed: boolean
}

export interface ImageServer {
  /** e.g. http://127.0.0.1:41234 */
  baseUrl: string
  url(path: string): string
  /** Every request received, in order. */
  requests: RecordedRequest[]
  /** Requests still open: not yet answered whole, and the client still connected (e.g. those /hang holds). */
  openRequests(): number
  close(): Promise<void>
}

export type Route = (request: IncomingMessage, response: ServerResponse, url: URL) => void

export interface ServeOptions {
  /** Answer a Range request with 206 and Content-Range (default true), as most static servers do. */
  ranges?: boolean
  /** Send Content-Length (default true); false streams the body chunked, its size unknown in advance. */
  length?: boolean
  /** Announce an unknown total in Content-Range ("bytes 0-4095/*"). */
  hideTotal?: boolean
  contentType?: string
}

/** Serves `body` the way a static file server would, honouring `Range: bytes=a-b`. */
export function serveBytes(request: IncomingMessage, response: ServerResponse, body: Buffer, options: ServeOptions = {}) {
  const range = /^bytes=(\d+)-(\d*)$/.exec(request.headers.range ?? '')
  response.setHeader('content-type', options.contentType ?? 'application/octet-stream')
  let status = 200
  let part = body
  if (range && options.ranges !== false) {
    const start = Number(range[1])
    const end = Math.min(range[2] === '' ? body.length - 1 : Number(range[2]), body.length - 1)
    part = body.subarray(start, end + 1)
    status = 206
    response.setHeader('content-range', `bytes ${start}-${end}/${options.hideTotal ? '*' : body.length}`)
  }
  if (options.length !== false) response.setHeader('content-length', part.length)
  response.writeHead(status)
  // Chunked bodies go out in pieces so the reader cannot get them in one read.
  if (options.length === false) {
    for (let offset = 0; offset < part.length; offset += 64 * 1024) response.write(part.subarray(offset, offset + 64 * 1024))
    response.end()
  } else {
    response.end(part)
  }
}

/** A PNG signature followed by zeros: `size` bytes that sniff as PNG (size, not pixels, is under test). */
export function pngOfSize(size: number): Buffer {
  const body = Buffer.alloc(size)
  IMAGES.png.copy(body, 0, 0, Math.min(IMAGES.png.length, size))
  return body
}

const flag = (url: URL, name: string) => url.searchParams.get(name) !== 'off'

const tinyFiles: Record<string, Buffer> = {
  png: IMAGES.png,
  jpg: IMAGES.jpeg,
  gif: IMAGES.gif,
  webp: IMAGES.webp,
  bmp: IMAGES.bmp,
  tiff: IMAGES.tiff,
  avif: IMAGES.avif,
  svg: IMAGES.svg,
  pdf: IMAGES.pdf,
  html: IMAGES.html,
}

/**
 * Routes every image test needs, by the first path segment:
 * - /img/<anything>: the tiny PNG (the default fixture image)
 * - /tiny.<png|jpg|gif|webp|bmp|tiff|avif|svg|pdf|html>: the real files
 * - /as/<format>/<any name>: the file of that format under any name (a PNG named .jpg, an SVG named .png)
 * - /text/<any name>: plain text
 * - /size/<bytes>?ranges=off&length=off&total=off: a PNG-signed body of that many bytes
 * - /status/<code>, /redirect/<hops>, /loop, /to?url=<target>, /drip (one byte a second)
 * - /hang/<any name>: never answers (no headers, ever); the connection stays open until the client closes it
 */
const builtInRoutes: Record<string, Route> = {
  img: (request, response) => serveBytes(request, response, IMAGES.png, { contentType: 'image/png' }),
  as: (request, response, url) => {
    const body = tinyFiles[url.pathname.split('/')[2] ?? '']
    if (body) serveBytes(request, response, body, { contentType: 'image/png' })
    else response.writeHead(404).end()
  },
  text: (request, response) => serveBytes(request, response, Buffer.from('just some text, not an image\n')),
  size: (request, response, url) => {
    const size = Number(url.pathname.split('/')[2])
    const options = { ranges: flag(url, 'ranges'), length: flag(url, 'length'), hideTotal: !flag(url, 'total') }
    serveBytes(request, response, pngOfSize(size), options)
  },
  status: (_request, response, url) => {
    response.writeHead(Number(url.pathname.split('/')[2]), { 'content-type': 'text/plain' }).end('no image here')
  },
  redirect: (_request, response, url) => {
    const left = Number(url.pathname.split('/')[2])
    response.writeHead(302, { location: left > 1 ? `/redirect/${left - 1}` : '/tiny.png' }).end()
  },
  loop: (_request, response) => response.writeHead(302, { location: '/loop' }).end(),
  to: (_request, response, url) => response.writeHead(302, { location: url.searchParams.get('url') ?? '/' }).end(),
  drip: (_request, response) => {
    // The PNG signature, then one byte a second: never finishes within any sane budget.
    response.writeHead(200, { 'content-type': 'image/png' })
    response.write(IMAGES.png.subarray(0, 16))
    const timer = setInterval(() => response.write(Buffer.from([0])), 1000)
    response.on('close', () => clearInterval(timer))
  },
  hang: () => {}, // headers never come
}

function builtInRoute(request: IncomingMessage, response: ServerResponse, url: URL): void {
  const tiny = /^\/tiny\.(\w+)$/.exec(url.pathname)
  const file = tiny ? tinyFiles[tiny[1] as string] : undefined
  const route = builtInRoutes[url.pathname.split('/')[1] ?? '']
  if (file) serveBytes(request, response, file)
  else if (route) route(request, response, url)
  else response.writeHead(404).end('not found')
}

/** A real HTTP server on `host` at a free port that records what it is asked. */
export async function startImageServer(host = '127.0.0.1', routes: Record<string, Route> = {}): Promise<ImageServer> {
  const requests: RecordedRequest[] = []
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://fixture')
    const recorded = { method: request.method ?? '', path: url.pathname + url.search, range: request.headers.range, closed: false }
    requests.push(recorded)
    response.once('close', () => (recorded.closed = true))
    const route = routes[url.pathname] ?? builtInRoute
    route(request, response, url)
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  // A fixture must never keep a test process alive on its own.
  server.unref()
  const { port } = server.address() as AddressInfo
  const baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  return {
    baseUrl,
    url: (path) => `${baseUrl}${path}`,
    requests,
    openRequests: () => requests.filter((request) => !request.closed).length,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
