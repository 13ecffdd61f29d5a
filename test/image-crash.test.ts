import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, test } from 'node:test'
import sharp from 'sharp'
import { item, listingBody } from './fixtures.js'
import { createTestDatabase, testDialects } from './helper.js'
import { phonePhoto } from './image-files.js'
import { killAll, runCli, startServer, type ServerProcess } from './process.js'

/**
 * docs/reliability.md: an upload answered 201 is durable. The service runs as a real process with uploads arriving
 * from 4 clients and is killed with SIGKILL at a random moment, three times; after each restart every image
 * acknowledged is served whole, is still the provider's (the same bytes again answer its id), and a listing can
 * name it. No file of the store is a partial image.
 */

after(killAll)

const CYCLES = 3
const CLIENTS = 4

interface Acknowledged {
  photo: Buffer
  answer: { id: string; url: string; bytes: number; width: number; height: number }
}

async function uploadUntilKilled(server: ServerProcess, token: string, acknowledged: Acknowledged[], killAfterMs: number): Promise<void> {
  let killed = false
  const unexpected: string[] = []
  const client = async (n: number) => {
    for (let i = 0; !killed; i++) {
      const photo = await phonePhoto(200 + n, 100 + ((acknowledged.length + i) % 400))
      try {
        const response = await fetch(`${server.baseUrl}/api/v1/images`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'image/jpeg' },
          body: new Uint8Array(photo),
        })
        const answer = await response.json()
        if (response.status === 201 || response.status === 200) acknowledged.push({ photo, answer })
        else unexpected.push(`${response.status} ${JSON.stringify(answer)}`)
      } catch (error) {
        if (!killed) unexpected.push(`client ${n}: ${(error as Error).message} before the kill`)
        return
      }
    }
  }
  const clients = Array.from({ length: CLIENTS }, (_, n) => client(n))
  await new Promise((resolve) => setTimeout(resolve, killAfterMs))
  killed = true
  server.child.kill('SIGKILL')
  assert.deepEqual(await server.closed, { code: null, signal: 'SIGKILL' })
  await Promise.all(clients)
  assert.deepEqual(unexpected, [])
}

describe('kill -9 with uploads in flight', { concurrency: true }, async () => {
  for (const dialect of await testDialects()) {
    test(`${CYCLES} kill -9 cycles: every acknowledged upload is served whole and stays the provider's [${dialect}]`, async () => {
      const database = await createTestDatabase(dialect)
      const folder = mkdtempSync(join(tmpdir(), 'image-crash-'))
      try {
        const made = await runCli(['provider', 'create', '--name', 'crash photos'], { DATABASE_URL: database.url })
        assert.equal(made.code, 0, made.stderr)
        const { token } = JSON.parse(made.stdout)
        // One address across restarts (each listens on a new port), as behind a load balancer.
        const env = { DATABASE_URL: database.url, IMAGE_STORE_URL: `file:${folder}`, PUBLIC_BASE_URL: 'http://photos.test', RATE_LIMIT_PER_MINUTE: '0' }
        const acknowledged: Acknowledged[] = []
        let server = await startServer(env)
        try {
          for (let cycle = 1; cycle <= CYCLES; cycle++) {
            await uploadUntilKilled(server, token, acknowledged, 400 + Math.floor(Math.random() * 800))
            server = await startServer(env)
            for (const { photo, answer } of acknowledged) {
              const served = await fetch(`${server.baseUrl}${new URL(answer.url).pathname}`)
              assert.equal(served.status, 200, `${answer.id} is served after the kill`)
              const bytes = Buffer.from(await served.arrayBuffer())
              assert.equal(bytes.length, answer.bytes)
              const decoded = await sharp(bytes, { failOn: 'warning' }).raw().toBuffer({ resolveWithObject: true })
              assert.deepEqual([decoded.info.width, decoded.info.height], [answer.width, answer.height])
              if (photo === acknowledged.at(-1)?.photo) {
                const again = await fetch(`${server.baseUrl}/api/v1/images`, {
                  method: 'POST',
                  headers: { authorization: `Bearer ${token}`, 'content-type': 'image/jpeg' },
                  body: new Uint8Array(photo),
                })
                assert.deepEqual([again.status, (await again.json()).id], [200, answer.id])
              }
            }
            // A partial file never has an image's name: every image file decodes whole.
            for (const file of readdirSync(folder).filter((name) => name.startsWith('img_'))) {
              await sharp(join(folder, file), { failOn: 'warning' }).raw().toBuffer()
            }
          }
          assert.ok(acknowledged.length > CYCLES, `uploads were acknowledged: ${acknowledged.length}`)
          const named = acknowledged.slice(0, 50).map(({ answer }, i) => item(i, { imageUrl: answer.url }))
          const created = await fetch(`${server.baseUrl}/api/v1/listing/create`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(listingBody({ items: named })),
          })
          assert.equal(created.status, 201, await created.text())
        } finally {
          await server.stop('SIGKILL')
        }
      } finally {
        rmSync(folder, { recursive: true, force: true })
        await database.drop()
      }
    })
  }
})
