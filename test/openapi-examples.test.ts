import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { dereference } from '@readme/openapi-parser'
import type { ImageFormat } from '../src/images/sniff.js'
import { startService, type TestService } from './helper.js'
import { imageOf } from './image-files.js'
import { FOR_MARKETPLACES, assertMatches, examplesOf, fetchDocument, marketplaceToken, operationsOf, realParameters, type Document } from './openapi-support.js'

// GET /openapi.json (docs/api.md): the examples are what the service accepts and answers, and every response has one. The machinery is in openapi-support.ts.

describe('GET /openapi.json: examples', () => {
  const service = {} as TestService
  // Example image URLs name public hosts this machine cannot reach; images are checked after validation, so
  // accepting every image here keeps these tests about the document, not the network.
  const acceptingImages = {} as TestService
  let document: Document

  before(async () => {
    Object.assign(service, await startService('sqlite'))
    Object.assign(acceptingImages, await startService('sqlite', { checkImages: async () => {} }))
    document = await fetchDocument(service)
  })
  after(async () => {
    await service.close()
    await acceptingImages.close()
  })

  test('each operation, sent with its request examples, succeeds with a documented response matching its schema', async () => {
    const resolved = await dereference(structuredClone(document))
    for (const [route, operation] of operationsOf(resolved)) {
      const [method, template] = route.split(' ') as [string, string]
      const providerToken = (operation.security ?? []).length > 0 ? (await acceptingImages.newProvider()).token : undefined
      // Discovery, holds, confirms and releases are for marketplace tokens; every other route with security serves providers.
      const token = providerToken !== undefined && FOR_MARKETPLACES.has(route) ? await marketplaceToken(acceptingImages) : providerToken
      const examples = new URLSearchParams()
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && parameter.name !== 'cursor' && parameter.name !== 'limit') examples.set(parameter.name, String(parameter.example))
      }
      // Ids in examples name nothing that exists: path parameters, the feed's `after`, the cursors and a body's `listingId`
      // name real things instead.
      // A public route naming something (an image) gets real values too, made by a provider of its own.
      const names = (operation.parameters ?? []).some((parameter: { in: string }) => parameter.in === 'path')
      const owner = providerToken ?? (names ? (await acceptingImages.newProvider()).token : undefined)
      const real = owner === undefined ? {} : await realParameters(acceptingImages, owner, route, examples)
      let path = template
      const query = new URLSearchParams()
      const headers: Record<string, string> = {}
      for (const parameter of operation.parameters ?? []) {
        assert.notEqual(parameter.example, undefined, `${route}: parameter ${parameter.name} has no example`)
        const value = real[parameter.name] ?? String(parameter.example)
        if (parameter.in === 'path') path = path.replace(`{${parameter.name}}`, encodeURIComponent(value))
        else if (parameter.in === 'header') headers[parameter.name] = value
        else query.set(parameter.name, value)
      }
      const search = query.size > 0 ? `?${query}` : ''
      const bodies = examplesOf(operation.requestBody?.content?.['application/json'] ?? {})
      // A body of bytes has no example in the document: a real image of each type it takes is sent instead.
      const imageTypes = Object.keys(operation.requestBody?.content ?? {}).filter((type) => type.startsWith('image/'))
      if (operation.requestBody) assert.ok(bodies.length > 0 || imageTypes.length > 0, `${route} has no request example`)
      const named = (json: unknown) =>
        json !== null && typeof json === 'object' && 'listingId' in json && real.listingId !== undefined ? { ...json, listingId: real.listingId } : json
      const sent: Array<readonly [string, { json?: unknown; raw?: Buffer; type?: string }]> = bodies.map(
        ([name, json]) => [name, { json: named(json) }] as const,
      )
      for (const type of imageTypes) sent.push([type, { raw: await imageOf(type.slice('image/'.length) as ImageFormat, 40, 30), type }])
      for (const [name, { json: body, raw, type }] of sent.length > 0 ? sent : [['no body', {}] as const]) {
        const response = await acceptingImages.request(method, `${path}${search}`, {
          token,
          json: body,
          raw,
          headers: type === undefined ? headers : { ...headers, 'content-type': type },
        })
        const context = `${route}${search} (${name}): ${response.status} ${response.text.slice(0, 500)}`
        assert.ok([200, 201, 204].includes(response.status), context)
        if (response.status === 204) {
          assert.ok(operation.responses[204], `the document does not describe ${context}`)
          assert.equal(response.text, '', context)
          continue
        }
        // JSON for the API; the Prometheus text of /metrics is text/plain.
        const mediaType = response.headers.get('content-type')?.split(';')[0] ?? ''
        const media = operation.responses[response.status]?.content?.[mediaType]
        assert.ok(media, `the document does not describe ${context} as ${mediaType}`)
        assertMatches(media.schema, mediaType === 'application/json' ? response.body : response.text, context)
      }
    }
  })

  test('every response has an example, and every example matches its response schema', async () => {
    const resolved = await dereference(structuredClone(document))
    for (const [route, operation] of operationsOf(resolved)) {
      for (const [status, response] of Object.entries<any>(operation.responses)) {
        // Not Modified and No Content have no body, by definition (RFC 9110 §15.4.5, §15.3.5).
        if (status === '304' || status === '204') {
          assert.equal(response.content, undefined, `${route} 304 has content`)
          continue
        }
        assert.ok(response.content, `${route} ${status} has no content`)
        for (const [mediaType, media] of Object.entries<any>(response.content)) {
          const examples = examplesOf(media)
          assert.ok(examples.length > 0, `${route} ${status} ${mediaType} has no example`)
          for (const [name, example] of examples) assertMatches(media.schema, example, `${route} ${status} example ${name}`)
        }
      }
    }
  })
})
