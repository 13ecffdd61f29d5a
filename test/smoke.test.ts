import assert from 'node:assert/strict'
import { test } from 'node:test'
import { describeEachDialect } from './helper.js'
import { listingBody } from './fixtures.js'

await describeEachDialect('smoke', (service) => {
  test('create then list', async () => {
    const provider = await service.newProvider()
    const created = await service.create(provider.token, listingBody())
    assert.equal(created.status, 201, created.text)
    const listed = await service.list(provider.token)
    assert.equal(listed.body.recordCount, 1)
  })
})
