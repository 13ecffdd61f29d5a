import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { Clock } from '../clock.js'
import { invalidRequest, notFoundParameter, Problem, type ProblemType } from '../errors.js'
import { jsonResponse, noContentResponse } from '../http/openapi.js'
import { BODY_PROBLEMS } from '../http/problem-responses.js'
import { defaultsFilled } from '../http/validation.js'
import { prefixedId } from '../ids.js'
import { ipLiteral, type AddressPolicy } from '../images/address-policy.js'
import { ownerOf } from '../events/owner.js'
import { principalOf } from '../providers/authenticate.js'
import { BIDI_CONTROLS_DETAIL, hasBidiControls } from './bidi-controls.js'
import { ALL_EVENTS, maskOf } from './event-mask.js'
import { endpointView, MAX_ENDPOINTS_PER_OWNER, type WebhookRepository } from './repository.js'
import {
  CreatedWebhookEndpoint,
  CreateWebhookBody,
  DeliveriesPage,
  DeliveriesQuery,
  exampleAttempts,
  exampleCreatedEndpoint,
  exampleDisabledEndpoint,
  exampleEndpoint,
  RotatedSecret,
  WebhookEndpoint,
  WebhookIdParams,
  WebhookList,
  type DeliveriesParams,
} from './schemas.js'
import { generateSecret } from './signature.js'

export interface WebhookRoutesOptions {
  webhooks: WebhookRepository
  clock: Clock
  /** The attempts' address policy: a URL whose host is an address literal it refuses is refused at create. */
  policy: AddressPolicy
}

/** After a rotation the previous secret signs too, for this long. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000

/** The shape of prefixedId('wh'): anything else names no endpoint and is not looked up. */
const ENDPOINT_ID = /^wh_[0-9A-HJKMNP-TV-Z]{26}$/

const notFound = () => notFoundParameter('webhookId', 'no webhook endpoint of yours has this id')

/** The endpoint id a request names, when it has an endpoint id's shape: no other is looked up. */
function endpointIdOf({ webhookId }: { webhookId: string }): string {
  if (!ENDPOINT_ID.test(webhookId)) throw notFound()
  return webhookId
}

function found<T>(row: T | undefined): T {
  if (row === undefined) throw notFound()
  return row
}

const endpointResponse = (description: string) => jsonResponse(description, WebhookEndpoint, { enabled: exampleEndpoint, disabled: exampleDisabledEndpoint })

const PROBLEMS: ProblemType[] = ['invalid-request', 'not-found', 'internal', 'unavailable']

/** A provider's and a marketplace's endpoints alike: each sees and changes only its own. */
const ownerId = (request: FastifyRequest) => ownerOf(principalOf(request)).id

/** Every route here serves provider and marketplace tokens. */
const config = { principal: 'any' } as const

export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRoutesOptions> = async (app, { webhooks, clock, policy }) => {
  app.post(
    '/webhooks',
    {
      config,
      schema: {
        operationId: 'createWebhook',
        tags: ['webhooks'],
        summary: 'Add a webhook endpoint',
        description:
          'Every event of your stream of the chosen types committed from now on is POSTed to `url`, signed as the Standard ' +
          'Webhooks specification says (`webhook-id`, `webhook-timestamp`, `webhook-signature`); its body is the ' +
          'event as the feed shows it. Any `2xx` within WEBHOOK_TIMEOUT_MS is success; redirects are not followed; ' +
          '`410` disables the endpoint; anything else is retried after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, ' +
          `20 h and 24 h (WEBHOOK_RETRY_SCHEDULE). At most ${MAX_ENDPOINTS_PER_OWNER} endpoints per provider or marketplace. ` +
          'The answer holds the signing secret, shown only here (and at rotation).',
        body: CreateWebhookBody,
        response: {
          201: jsonResponse('The endpoint, enabled, with its signing secret.', CreatedWebhookEndpoint, { created: exampleCreatedEndpoint }),
        },
        'x-problems': ['invalid-request', 'conflict', ...BODY_PROBLEMS],
      },
    },
    async (request, reply) => {
      const input = request.body
      if (hasBidiControls(input.url)) throw invalidRequest([{ pointer: '/url', detail: BIDI_CONTROLS_DETAIL }])
      const literal = ipLiteral(new URL(input.url).hostname)
      if (literal !== undefined && !policy(literal)) {
        throw invalidRequest([{ pointer: '/url', detail: `${literal} is not a public address: webhooks are sent to the public internet only` }])
      }
      const nowMs = clock()
      const secret = generateSecret()
      const created = await webhooks.create({
        owner: ownerOf(principalOf(request)),
        id: prefixedId('wh', nowMs),
        url: input.url,
        eventMask: input.events === undefined ? ALL_EVENTS : maskOf(input.events),
        secret,
        nowMs,
      })
      if (created === 'limit') {
        throw new Problem('conflict', `you already have ${MAX_ENDPOINTS_PER_OWNER} webhook endpoints, the most you may have; delete one first`)
      }
      return reply.code(201).send({ ...endpointView(created), secret })
    },
  )

  app.get(
    '/webhooks',
    {
      config,
      schema: {
        operationId: 'listWebhooks',
        tags: ['webhooks'],
        summary: 'Your webhook endpoints',
        description: 'Every endpoint you have, oldest first, without secrets.',
        response: { 200: jsonResponse('Your endpoints.', WebhookList, { endpoints: { data: [exampleEndpoint] } }) },
        'x-problems': ['internal', 'unavailable'],
      },
    },
    async (request) => ({ data: (await webhooks.list(ownerId(request))).map(endpointView) }),
  )

  app.get(
    '/webhooks/:webhookId',
    {
      config,
      schema: {
        operationId: 'getWebhook',
        tags: ['webhooks'],
        summary: 'One webhook endpoint',
        description: 'With its `status` and, when disabled, why. Another provider’s or marketplace’s endpoint is `404`, as an unknown id is.',
        params: WebhookIdParams,
        response: { 200: endpointResponse('The endpoint.') },
        'x-problems': PROBLEMS,
      },
    },
    async (request) => endpointView(found(await webhooks.find(ownerId(request), endpointIdOf(request.params)))),
  )

  app.delete(
    '/webhooks/:webhookId',
    {
      config,
      schema: {
        operationId: 'deleteWebhook',
        tags: ['webhooks'],
        summary: 'Delete a webhook endpoint',
        description: 'No attempt starts for it afterwards; what it was still owed and its delivery log go with it.',
        params: WebhookIdParams,
        response: { 204: noContentResponse('Deleted.') },
        'x-problems': PROBLEMS,
      },
    },
    async (request, reply) => {
      const endpointId = endpointIdOf(request.params)
      if (!(await webhooks.delete({ ownerId: ownerId(request), endpointId }))) throw notFound()
      return reply.code(204).send()
    },
  )

  app.post(
    '/webhooks/:webhookId/rotate-secret',
    {
      config,
      schema: {
        operationId: 'rotateWebhookSecret',
        tags: ['webhooks'],
        summary: 'Replace the signing secret',
        description:
          'A new secret, shown only here. For 24 hours deliveries carry two signatures, by the new secret and by ' +
          'the one it replaces, so receivers can switch without missing a delivery. No body.',
        params: WebhookIdParams,
        response: { 200: jsonResponse('The new secret.', RotatedSecret, { rotated: { secret: exampleCreatedEndpoint.secret } }) },
        'x-problems': PROBLEMS,
      },
    },
    async (request) => {
      const endpointId = endpointIdOf(request.params)
      const secret = generateSecret()
      found(await webhooks.rotateSecret({ ownerId: ownerId(request), endpointId, secret, previousUntilMs: clock() + ROTATION_OVERLAP_MS }))
      return { secret }
    },
  )

  app.post(
    '/webhooks/:webhookId/enable',
    {
      config,
      schema: {
        operationId: 'enableWebhook',
        tags: ['webhooks'],
        summary: 'Enable a disabled webhook endpoint',
        description:
          'Events committed from now on are sent to it again, and the deliveries it was still owed are attempted ' +
          'when due. Enabling an enabled endpoint changes nothing. No body.',
        params: WebhookIdParams,
        response: { 200: jsonResponse('The endpoint, enabled.', WebhookEndpoint, { enabled: exampleEndpoint }) },
        'x-problems': PROBLEMS,
      },
    },
    async (request) => {
      const endpointId = endpointIdOf(request.params)
      return endpointView(found(await webhooks.enable({ ownerId: ownerId(request), endpointId })))
    },
  )

  app.get(
    '/webhooks/:webhookId/deliveries',
    {
      config,
      schema: {
        operationId: 'listWebhookDeliveries',
        tags: ['webhooks'],
        summary: 'The delivery log of a webhook endpoint',
        description:
          'Newest first: each attempt made, and for each delivery still owed its next attempt (`pending`). Kept ' + 'EVENT_RETENTION_DAYS (30 by default).',
        params: WebhookIdParams,
        querystring: defaultsFilled<DeliveriesParams>(DeliveriesQuery),
        response: { 200: jsonResponse('The log.', DeliveriesPage, { log: { data: exampleAttempts } }) },
        'x-problems': PROBLEMS,
      },
    },
    async (request) => {
      const endpoint = found(await webhooks.find(ownerId(request), endpointIdOf(request.params)))
      const { limit } = request.query
      return { data: await webhooks.deliveries({ ownerId: endpoint.owner_id, endpointId: endpoint.id }, limit) }
    },
  )
}
