// The ceiling of the benchmark: bare node:http answering every request with the same bytes the service
// returns for a page. Whatever the service does beyond this is its cost. Prints its port, then serves.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'

const body = readFileSync(process.argv[2])
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length }
const server = createServer((request, response) => {
  request.resume()
  response.writeHead(200, headers).end(body)
})
server.listen(0, '127.0.0.1', () => console.log(server.address().port))
process.on('SIGTERM', () => server.close(() => process.exit(0)).closeAllConnections())
