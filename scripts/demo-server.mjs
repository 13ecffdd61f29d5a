// For the README's walk-through only: a local stand-in for the internet, so the walk-through works offline.
//
//   node scripts/demo-server.mjs        (DEMO_PORT, default 8001; listens on 127.0.0.1 only)
//
// GET /tiny.png answers a small PNG (the image a listing names: the service fetches it before storing).
// Any POST is taken as a webhook delivery: it prints one line per delivery and answers 204.
// The service refuses loopback addresses unless it runs with IMAGE_ALLOW_PRIVATE_NETWORKS=true and
// WEBHOOK_ALLOW_PRIVATE_NETWORKS=true. Never set those in production.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

const png = readFileSync(new URL('../test/images/tiny.png', import.meta.url))
const port = Number(process.env.DEMO_PORT ?? 8001)

const server = createServer((request, response) => {
  if (request.method === 'GET' && request.url === '/tiny.png') {
    response.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length })
    response.end(png)
    return
  }
  if (request.method === 'POST') {
    let body = ''
    request.setEncoding('utf8')
    request.on('data', (chunk) => (body += chunk))
    request.on('end', () => {
      let type = '?'
      try {
        type = JSON.parse(body).type
      } catch {
        // not JSON: the type stays '?'
      }
      console.log(`webhook received: ${type} webhook-id=${request.headers['webhook-id']} signed=${Boolean(request.headers['webhook-signature'])}`)
      response.writeHead(204)
      response.end()
    })
    return
  }
  response.writeHead(404)
  response.end()
})

server.listen(port, '127.0.0.1', () => {
  console.log(`demo server on http://127.0.0.1:${port}: GET /tiny.png, POST anything (logged as a webhook)`)
})
