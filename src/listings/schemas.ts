import { Type, type Static } from 'typebox'

/**
 * The listing API's shapes. Each schema here validates requests (http/validation.ts), gives the TypeScript
 * type through Static<>, serialises responses, and is what the OpenAPI document shows.
 */

const closed = { additionalProperties: false } as const

const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  format: 'display-name',
  description: 'At least one non-whitespace character; at most 200 characters; stored exactly as sent.',
})

const DisplayName = Type.Object({ ar: Name, en: Name }, closed)

const UrlSafeName = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[A-Za-z0-9._~-]+$',
  description: 'RFC 3986 unreserved characters only: A–Z a–z 0–9 - . _ ~',
})

const ImageUrl = Type.String({
  maxLength: 2048,
  format: 'http-url',
  description: 'Absolute http or https URL of a jpg, png, webp or gif image of at most 5 MiB.',
})

export const ListingTypes = ['timed', 'priority_timed'] as const
export const Categories = ['service', 'product', 'tax'] as const
export const SubCategories = ['delivery', 'main_dish', 'side_dish', 'drink', 'vat'] as const

export const ItemInput = Type.Object(
  {
    displayName: DisplayName,
    urlSafeName: UrlSafeName,
    imageUrl: Type.Optional(ImageUrl),
    category: Type.Enum(Categories),
    subCategory: Type.Enum(SubCategories),
    price: Type.Number({
      minimum: 1,
      maximum: 1_000_000_000,
      multipleOf: 0.001,
      description: 'At most 3 decimal places; stored and returned exactly.',
    }),
    quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
  },
  closed,
)

export const CreateListingBody = Type.Object(
  {
    referenceId: Type.String({
      minLength: 1,
      maxLength: 255,
      format: 'text',
      description: 'Your identifier for this listing, unique among your listings; replaying it is safe.',
    }),
    location: Type.Object(
      {
        latitude: Type.Number({ minimum: -90, maximum: 90 }),
        longitude: Type.Number({ minimum: -180, maximum: 180 }),
      },
      closed,
    ),
    brand: Type.Object({ displayName: DisplayName, urlSafeName: UrlSafeName, imageUrl: ImageUrl }, closed),
    listingDetails: Type.Object(
      {
        discountRate: Type.Number({ minimum: 0.1, maximum: 1 }),
        type: Type.Optional(Type.Enum(ListingTypes, { default: 'timed' })),
        isAssignedToDriver: Type.Optional(Type.Boolean({ default: true })),
      },
      closed,
    ),
    items: Type.Array(ItemInput, { minItems: 1, maxItems: 100, description: 'Kept in the order sent.' }),
  },
  closed,
)

type Body = Static<typeof CreateListingBody>
type Item = Static<typeof ItemInput>

/** A create body once validated: Ajv has filled every default, so defaulted fields are always present. */
export type CreateListingInput = Omit<Body, 'listingDetails' | 'items'> & {
  listingDetails: Required<Body['listingDetails']>
  items: Array<Item & { quantity: number }>
}

export const CreateListingResponse = Type.Object({
  success: Type.Literal(true),
  listingId: Type.String(),
  expiresAtUnix: Type.Integer({ description: 'Unix time in seconds: creation second + the TTL of the type.' }),
})
export type CreateListingResult = Static<typeof CreateListingResponse>

export const ListListingsQuery = Type.Object(
  {
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10 })),
  },
  closed,
)
export type ListListingsParams = Required<Static<typeof ListListingsQuery>>

export const ListingStatuses = ['active', 'expired'] as const

export const Listing = Type.Object({
  id: Type.String(),
  status: Type.Enum(ListingStatuses, { description: '`active` while now < expiresAtUnix, then `expired`.' }),
  referenceId: Type.String(),
  expiresAtUnix: Type.Integer(),
  items: Type.Array(
    Type.Object({
      nameAr: Type.String(),
      nameEn: Type.String(),
      price: Type.Number(),
      quantity: Type.Integer(),
      category: Type.Enum(Categories),
    }),
  ),
  brand: Type.Object({ nameAr: Type.String(), nameEn: Type.String(), industry: Type.String() }),
})
export type Listing = Static<typeof Listing>

export const ListingsPage = Type.Object({
  content: Type.Array(Listing, { description: 'Newest first: creation time, then id, descending.' }),
  recordCount: Type.Integer({ description: 'All of your listings, every status.' }),
})
export type ListingsPage = Static<typeof ListingsPage>
