import { Type, type Static } from 'typebox'
import { named, ref } from '../http/components.js'
import { exampleListingView, ListingView } from '../listings/schemas.js'

const closed = { additionalProperties: false } as const

const DiscoverySorts = ['distance', 'ending_soon'] as const

/** A walk or a short ride: the common "near me" question. */
const DEFAULT_RADIUS_KM = 5

const exampleCursor = `${Buffer.from(JSON.stringify({ q: 'Yd3hK0v9RkqF2mXw', k: 312.48, id: exampleListingView.id })).toString('base64url')}.rG4cQ0s1Zk3Vb8Xy2Pq9Tw`

export const DiscoverQuery = Type.Object(
  {
    latitude: Type.Number({ minimum: -90, maximum: 90, description: 'Where to search from: degrees, −90 to 90.', examples: [24.7136] }),
    longitude: Type.Number({ minimum: -180, maximum: 180, description: 'Degrees, −180 to 180.', examples: [46.6753] }),
    radiusKm: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 50,
        default: DEFAULT_RADIUS_KM,
        description:
          'Kilometres, more than 0 and at most 50 (default 5). A listing is within it when its great-circle distance (sphere of radius 6,371,008.8 m) is at ' +
          'most radiusKm × 1000 m, unrounded; the circle crosses the antimeridian and the poles.',
        examples: [3],
      }),
    ),
    sort: Type.Optional(
      Type.Enum(DiscoverySorts, {
        default: 'distance',
        description: '`distance`: nearest first, then by id. `ending_soon`: `expiresAtUnix` ascending, then by id.',
        examples: ['distance'],
      }),
    ),
    minDiscountRate: Type.Optional(
      Type.Number({ minimum: 0.1, maximum: 1, default: 0.1, description: 'Only listings discounted at least this much: 0.1 to 1.0.', examples: [0.3] }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 20, description: 'Listings per page, 1 to 50.', examples: [20] })),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 300,
        format: 'discovery-cursor',
        description:
          'The previous page’s `nextCursor`, with the same other parameters (`limit` may change): the next page. A cursor that is not one, or was given for ' +
          'other parameters, is `400`. Format `discovery-cursor`: a `nextCursor` of this API.',
        examples: [exampleCursor],
      }),
    ),
  },
  closed,
)
export type DiscoverParams = Static<typeof DiscoverQuery> & {
  radiusKm: number
  sort: (typeof DiscoverySorts)[number]
  minDiscountRate: number
  limit: number
}

export const DiscoveredListing = Type.Object(
  {
    ...ListingView.properties,
    providerId: Type.String({ description: 'The provider whose listing it is.', examples: ['prv_01M7YQ1WE0XK8J4Q2ZB5N6C7D8E9'] }),
  },
  { ...closed, description: 'The listing as read (as `GET /api/v1/listing/{listingId}` answers its provider), with its provider’s id.' },
)
named('DiscoveredListing', DiscoveredListing)

export const DiscoverPage = Type.Object(
  {
    data: Type.Array(
      Type.Object(
        {
          distanceMeters: Type.Integer({ minimum: 0, description: 'Great-circle distance from the point, in metres, rounded.', examples: [312] }),
          available: Type.Array(Type.Integer({ minimum: 0 }), {
            description:
              'Each item’s units that can be reserved now (its quantity less what reservations hold), by position. A listing with none available is left out.',
            examples: [[4, 0]],
          }),
          listing: ref(DiscoveredListing),
        },
        closed,
      ),
      { description: 'Listings `active` now, in the order `sort` asks.' },
    ),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Pass it as `cursor` for the next page; null when this page is the last.',
    }),
  },
  closed,
)
named('DiscoverPage', DiscoverPage)
export type DiscoverPage = Static<typeof DiscoverPage>

const exampleActive = {
  ...exampleListingView,
  status: 'active' as const,
  items: exampleListingView.items.map((item) => ({ ...item, quantity: Math.max(1, item.quantity) })),
}

export const exampleDiscoverPage: DiscoverPage = {
  data: [
    {
      distanceMeters: 312,
      available: exampleActive.items.map((item) => item.quantity),
      listing: { ...exampleActive, providerId: 'prv_01M7YQ1WE0XK8J4Q2ZB5N6C7D8E9' },
    },
  ],
  nextCursor: null,
}
