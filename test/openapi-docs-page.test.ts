import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { documentedService } from './openapi-support.js'

// GET /openapi.json (docs/api.md): GET /docs serves everything it needs itself, and shows the document /openapi.json serves. The machinery is in openapi-support.ts.

describe('GET /docs', () => {
  const setup = documentedService()
  const { service } = setup

  test('GET /docs is an HTML page whose assets all come from the service', async () => {
    const page = await service.request('GET', '/docs')
    assert.equal(page.status, 200)
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/)
    const { host } = new URL(service.baseUrl)
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1] as string)
    assert.ok(assets.length >= 3, page.text)
    for (const asset of assets) {
      const url = new URL(asset, `${service.baseUrl}/docs`)
      assert.equal(url.host, host, `${asset} is not served by the service`)
      const response = await fetch(url)
      assert.equal(response.status, 200, `${asset}: ${response.status}`)
      const text = await response.text()
      // A stylesheet could still pull fonts or images from elsewhere.
      if (asset.endsWith('.css')) assert.doesNotMatch(text, /url\(\s*["']?(https?:)?\/\/|@import/, asset)
    }
    // The page loads the document from beside itself: the same one /openapi.json serves.
    const initializer = await service.request('GET', '/docs/static/swagger-initializer.js')
    assert.match(initializer.text, /resolveUrl\('\.\/json'\)/)
    assert.deepEqual((await service.request('GET', '/docs/json')).body, setup.document)
  })
})
