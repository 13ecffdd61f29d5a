import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import S3rver from 's3rver'
import { buildApp } from '../src/app.js'
import { loadConfig } from '../src/config.js'
import { openDatabase } from '../src/db/connection.js'
import { openImageStore, type ImageStore, type StoredImage } from '../src/images/image-store.js'
import { removeUnusedImages } from '../src/images/uploads.js'
import { item, listingBody } from './fixtures.js'
import { startService, testDialects } from './helper.js'
import { phonePhoto } from './image-files.js'

/**
 * docs/operations.md#where-uploaded-images-are-kept: the two stores behind one interface, the S3 one against a real
 * S3-compatible server (s3rver, on 127.0.0.1); and two instances of the service sharing one database and one store.
 */

const BUCKET = 'photos'
const DAY_MS = 24 * 3600 * 1000
let s3: S3rver
let s3Folder: string
let endpoint: string

// The SDK's credential chain reads these; the server accepts its own fixed pair.
process.env.AWS_ACCESS_KEY_ID = 'S3RVER'
process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER'

before(async () => {
  s3Folder = mkdtempSync(join(tmpdir(), 's3rver-'))
  s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: s3Folder, configureBuckets: [{ name: BUCKET, configs: [] }] })
  const { port } = await s3.run()
  endpoint = `http://127.0.0.1:${port}`
})
after(async () => {
  await s3.close()
  rmSync(s3Folder, { recursive: true, force: true })
})

async function bytesOf(stored: StoredImage | undefined): Promise<Buffer | undefined> {
  if (!stored) return undefined
  if (Buffer.isBuffer(stored.body)) return stored.body
  const chunks: Buffer[] = []
  for await (const chunk of stored.body) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

/** Each store, as IMAGE_STORE_URL and S3_ENDPOINT name it; the folder of a directory store is removed after. */
function storeSettings(kind: 'file' | 's3'): { env: Record<string, string>; cleanUp: () => void } {
  if (kind === 's3') return { env: { IMAGE_STORE_URL: `s3://${BUCKET}/listing-test/`, S3_ENDPOINT: endpoint }, cleanUp: () => {} }
  const folder = mkdtempSync(join(tmpdir(), 'image-store-'))
  return { env: { IMAGE_STORE_URL: `file:${folder}` }, cleanUp: () => rmSync(folder, { recursive: true, force: true }) }
}

const dialects = await testDialects()

for (const kind of ['file', 's3'] as const) {
  describe(`image store: ${kind}`, () => {
    test('put, get, size and delete; an unknown key is undefined, and deleting it is done', async () => {
      const { env, cleanUp } = storeSettings(kind)
      try {
        const store: ImageStore = await openImageStore(loadConfig(env))
        const bytes = await phonePhoto(30, 20)
        assert.equal(await store.get('img_none.jpg'), undefined)
        assert.equal(await store.size('img_none.jpg'), undefined)
        await store.put('img_one.jpg', bytes, 'image/jpeg')
        assert.equal(await store.size('img_one.jpg'), bytes.length)
        const stored = await store.get('img_one.jpg')
        assert.equal(stored?.bytes, bytes.length)
        assert.deepEqual(await bytesOf(stored), bytes)
        await store.delete('img_one.jpg')
        await store.delete('img_one.jpg')
        assert.equal(await store.get('img_one.jpg'), undefined)
      } finally {
        cleanUp()
      }
    })

    for (const dialect of dialects) {
      test(`two instances on one database and one store serve, accept and remove each other's uploads [${dialect}]`, async () => {
        const { env, cleanUp } = storeSettings(kind)
        // Behind one address, as a load balancer puts them: each recognises the other's urls as its own.
        const shared = { ...env, PUBLIC_BASE_URL: 'https://listings.example.com', IMAGE_ALLOW_PRIVATE_NETWORKS: 'false', RATE_LIMIT_PER_MINUTE: '0' }
        const first = await startService(dialect, { env: shared })
        const config = loadConfig({ ...shared, DATABASE_URL: first.databaseUrl, LOG_LEVEL: 'silent' })
        const database = openDatabase(config.DATABASE_URL)
        const second = await buildApp({ config, database, clock: first.clock })
        const secondUrl = await second.listen({ port: 0, host: '127.0.0.1' })
        try {
          const provider = await first.newProvider()
          const upload = async (baseUrl: string, bytes: Buffer) => {
            const response = await fetch(`${baseUrl}/api/v1/images`, {
              method: 'POST',
              headers: { authorization: `Bearer ${provider.token}`, 'content-type': 'image/jpeg' },
              body: new Uint8Array(bytes),
            })
            return { status: response.status, body: await response.json() }
          }
          const photo = await phonePhoto(64, 48)
          const uploaded = await upload(first.baseUrl, photo)
          assert.equal(uploaded.status, 201)
          assert.match(uploaded.body.url, /^https:\/\/listings\.example\.com\/images\/img_/)
          const path = new URL(uploaded.body.url).pathname
          const [fromFirst, fromSecond] = await Promise.all([first.baseUrl, secondUrl].map((base) => fetch(`${base}${path}`)))
          assert.deepEqual([fromFirst?.status, fromSecond?.status], [200, 200])
          assert.deepEqual(Buffer.from(await (fromSecond as Response).arrayBuffer()), Buffer.from(await (fromFirst as Response).arrayBuffer()))
          // The same bytes on the other instance: the same image.
          assert.deepEqual(await upload(secondUrl, photo), { status: 200, body: uploaded.body })

          const created = await fetch(`${secondUrl}/api/v1/listing/create`, {
            method: 'POST',
            headers: { authorization: `Bearer ${provider.token}`, 'content-type': 'application/json' },
            body: JSON.stringify(listingBody({ brand: { ...listingBody().brand, imageUrl: uploaded.body.url }, items: [item(0)] })),
          })
          assert.equal(created.status, 201, await created.text())

          const unused = await upload(secondUrl, await phonePhoto(65, 48))
          first.clock.now += 8 * DAY_MS
          const store = await openImageStore(config)
          assert.equal(await removeUnusedImages(first.database.writer, store, { beforeMs: first.clock.now - 7 * DAY_MS, limit: 10 }), 1)
          const after = await Promise.all([uploaded, unused].map(({ body }) => fetch(`${secondUrl}${new URL(body.url).pathname}`)))
          assert.deepEqual(
            after.map((response) => response.status),
            [200, 404],
          )
        } finally {
          await second.close()
          await database.close()
          await first.close()
          cleanUp()
        }
      })
    }
  })
}
