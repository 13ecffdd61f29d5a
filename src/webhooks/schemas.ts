import { Type, type Static } from 'typebox'
import { EventType } from '../events/schemas.js'
import { named, ref } from '../http/components.js'
import { EventTypes } from '../events/types.js'
import { Timestamp } from '../listings/schemas.js'

const closed = { additionalProperties: false } as const

const exampleTime = '2026-11-22T10:00:00.123Z'

export const CreateWebhookBody = Type.Object(
  {
    url: Type.String({
      maxLength: 2048,
      format: 'http-url',
      description:
        'Where events are POSTed. Format `http-url`: an absolute http or https URL without a user name or ' +
        'password. Bidirectional control characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) are ' +
        'refused: they would make it read as another. An address literal that is not public (loopback, private, ' +
        'link-local…) is refused here; a host name is resolved and checked at every attempt, and an attempt to a non-public address fails without ' +
        'contacting it.',
    }),
    events: Type.Optional(
      Type.Array(EventType, {
        minItems: 1,
        uniqueItems: true,
        description: 'The event types to receive. Absent: every type.',
      }),
    ),
  },
  { ...closed, examples: [{ url: 'https://pos.example.com/hooks/listings', events: ['listing.created', 'listing.updated'] }] },
)

const EndpointFields = {
  id: Type.String({ description: 'Names the endpoint in the routes below.', examples: ['wh_01M7YQ1WE0XK8J4Q2ZB5N6C7D8'] }),
  url: Type.String(),
  events: Type.Array(ref(EventType), { description: 'The event types it receives.' }),
  status: Type.Enum(['enabled', 'disabled'], {
    description:
      '`disabled` after a `410 Gone` answer, or after 5 days of nothing but failed attempts; `POST …/enable` enables ' +
      'it again. A disabled endpoint is not sent events committed meanwhile; what it was owed before is attempted ' +
      'once it is enabled.',
  }),
  disabledReason: Type.Union([Type.String(), Type.Null()], { description: 'Why it is disabled; null while enabled.' }),
  createdAt: Timestamp,
}

export const WebhookEndpoint = Type.Object(EndpointFields, closed)
named('WebhookEndpoint', WebhookEndpoint)
export type WebhookEndpoint = Static<typeof WebhookEndpoint>

const Secret = Type.String({
  pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
  description: 'The signing secret, shown only here: `whsec_` and the base64 of 32 random bytes, as the Standard Webhooks ' + 'libraries take it.',
  examples: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3RkMvEgXyT0='],
})

export const CreatedWebhookEndpoint = Type.Object({ ...EndpointFields, secret: Secret }, closed)
named('CreatedWebhookEndpoint', CreatedWebhookEndpoint)
export type CreatedWebhookEndpoint = Static<typeof CreatedWebhookEndpoint>

export const WebhookList = named('WebhookList', Type.Object({ data: Type.Array(ref(WebhookEndpoint), { description: 'Oldest first.' }) }, closed))

export const RotatedSecret = named('RotatedSecret', Type.Object({ secret: Secret }, closed))

export const WebhookIdParams = Type.Object(
  { webhookId: Type.String({ minLength: 1, maxLength: 100, description: 'The id its create answered with.', examples: ['wh_01M7YQ1WE0XK8J4Q2ZB5N6C7D8'] }) },
  closed,
)

export const DeliveriesQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Entries, 1 to 100.', examples: [20] })),
  },
  closed,
)
export type DeliveriesParams = Required<Static<typeof DeliveriesQuery>>

export const DeliveryAttempt = Type.Object(
  {
    eventId: Type.String(),
    type: ref(EventType),
    attempt: Type.Integer({ minimum: 1, description: 'The attempt’s number for this event, from 1.' }),
    outcome: Type.Enum(['succeeded', 'failed', 'pending'], {
      description: '`succeeded` or `failed` for an attempt made; `pending` for the next attempt of a delivery still owed (`at` ' + 'is when it is due).',
    }),
    responseStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'The receiver’s status; null without an answer.' }),
    durationMs: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Null for `pending`.' }),
    at: { ...Timestamp, description: 'When the attempt started (for `pending`: when it is due).' },
    error: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed; null otherwise.' }),
  },
  closed,
)
named('DeliveryAttempt', DeliveryAttempt)
export type DeliveryAttempt = Static<typeof DeliveryAttempt>

export const DeliveriesPage = named('DeliveriesPage', Type.Object({ data: Type.Array(ref(DeliveryAttempt), { description: 'Newest first.' }) }, closed))

export const exampleEndpoint: WebhookEndpoint = {
  id: 'wh_01M7YQ1WE0XK8J4Q2ZB5N6C7D8',
  url: 'https://pos.example.com/hooks/listings',
  events: ['listing.created', 'listing.updated'],
  status: 'enabled',
  disabledReason: null,
  createdAt: exampleTime,
}

export const exampleDisabledEndpoint: WebhookEndpoint = {
  ...exampleEndpoint,
  events: [...EventTypes],
  status: 'disabled',
  disabledReason: 'the endpoint answered 410 Gone',
}

export const exampleCreatedEndpoint: CreatedWebhookEndpoint = {
  ...exampleEndpoint,
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3RkMvEgXyT0=',
}

export const exampleAttempts: DeliveryAttempt[] = [
  {
    eventId: 'evt_01M7YQ1WE0XK8J4Q2ZB5N6C7D8E9',
    type: 'listing.updated',
    attempt: 2,
    outcome: 'pending',
    responseStatus: null,
    durationMs: null,
    at: '2026-11-22T10:05:05.300Z',
    error: null,
  },
  {
    eventId: 'evt_01M7YQ1WE0XK8J4Q2ZB5N6C7D8E9',
    type: 'listing.updated',
    attempt: 1,
    outcome: 'failed',
    responseStatus: 503,
    durationMs: 41,
    at: '2026-11-22T10:05:00.012Z',
    error: 'answered 503',
  },
]
