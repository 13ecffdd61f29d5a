import { Type, type Static } from 'typebox'

/**
 * The listing API's shapes. Each schema here validates requests (http/validation.ts), gives the TypeScript
 * type through Static<>, serialises responses, and is what the OpenAPI document shows: the descriptions and
 * examples below are what an integrator reads at /docs.
 */

const closed = { additionalProperties: false } as const

// Custom formats (http/validation.ts) mean nothing to a generic OpenAPI tool, so each description says what
// its format checks.
const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  format: 'display-name',
  description:
    'At least one non-whitespace character; at most 200 characters; stored exactly as sent (no trimming or ' +
    'Unicode normalisation). Format `display-name`: Unicode text without NUL or lone surrogates that contains ' +
    'a non-whitespace character.',
})

const DisplayName = Type.Object({ ar: Name, en: Name }, { ...closed, description: 'The name in Arabic and English.' })

const UrlSafeName = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[A-Za-z0-9._~-]+$',
  description: 'RFC 3986 unreserved characters only: A–Z a–z 0–9 - . _ ~',
})

const ImageUrl = Type.String({
  maxLength: 2048,
  format: 'http-url',
  description:
    'Fetched by the service before the listing is stored: it must be a JPEG, PNG, GIF or WebP (judged by its ' +
    'first bytes) of at most 5 MiB (IMAGE_MAX_BYTES) on a public address. Format `http-url`: an absolute http ' +
    'or https URL without a user name or password.',
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
      description:
        'Unit price, 1 to 1,000,000,000, at most 3 decimal places; stored and returned exactly (19.99 stays ' +
        '19.99). `multipleOf` is meant decimally: validators that divide in floating point wrongly refuse 19.99.',
    }),
    quantity: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'Units offered, 1 to 1,000,000.' }),
    ),
  },
  closed,
)

/** The request example the OpenAPI document shows; a test sends it to the service and expects 201. */
const exampleListing = {
  referenceId: 'order-1001',
  location: { latitude: 24.7136, longitude: 46.6753 },
  brand: {
    displayName: { ar: 'مخبز الصباح', en: 'Morning Bakery' },
    urlSafeName: 'morning-bakery',
    imageUrl: 'https://images.example.com/morning-bakery/logo.png',
  },
  listingDetails: { discountRate: 0.4, type: 'timed', isAssignedToDriver: true },
  items: [
    {
      displayName: { ar: 'كرواسون بالزبدة', en: 'Butter croissant' },
      urlSafeName: 'butter-croissant',
      imageUrl: 'https://images.example.com/morning-bakery/croissant.jpg',
      category: 'product',
      subCategory: 'main_dish',
      price: 7.5,
      quantity: 12,
    },
    {
      displayName: { ar: 'قهوة عربية', en: 'Arabic coffee' },
      urlSafeName: 'arabic-coffee',
      category: 'product',
      subCategory: 'drink',
      price: 19.99,
      quantity: 6,
    },
    {
      displayName: { ar: 'توصيل', en: 'Delivery' },
      urlSafeName: 'delivery',
      category: 'service',
      subCategory: 'delivery',
      price: 15,
    },
  ],
}

export const CreateListingBody = Type.Object(
  {
    referenceId: Type.String({
      minLength: 1,
      maxLength: 255,
      format: 'text',
      description:
        'Your identifier for this listing, unique among your listings; sending the same body again is safe. ' +
        'Format `text`: Unicode text without NUL or lone surrogates.',
    }),
    location: Type.Object(
      {
        latitude: Type.Number({ minimum: -90, maximum: 90, description: 'Degrees north (WGS 84), -90 to 90.' }),
        longitude: Type.Number({ minimum: -180, maximum: 180, description: 'Degrees east (WGS 84), -180 to 180.' }),
      },
      closed,
    ),
    brand: Type.Object(
      { displayName: DisplayName, urlSafeName: UrlSafeName, imageUrl: ImageUrl },
      { ...closed, description: 'The brand the listing is offered under.' },
    ),
    listingDetails: Type.Object(
      {
        discountRate: Type.Number({
          minimum: 0.1,
          maximum: 1,
          description: 'The discount as a fraction of the price: 0.1 (10 %) to 1 (100 %).',
        }),
        type: Type.Optional(
          Type.Enum(ListingTypes, {
            default: 'timed',
            description:
              'Sets the lifetime: `timed` lives LISTING_TTL_TIMED_SECONDS (7200 s by default), `priority_timed` ' +
              'LISTING_TTL_PRIORITY_TIMED_SECONDS (3600 s by default).',
          }),
        ),
        isAssignedToDriver: Type.Optional(Type.Boolean({ default: true })),
      },
      closed,
    ),
    items: Type.Array(ItemInput, { minItems: 1, maxItems: 100, description: '1 to 100 items, kept in the order sent.' }),
  },
  { ...closed, examples: [exampleListing] },
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
  listingId: Type.String({ description: 'The listing’s id: 26 characters, sorting by creation time.' }),
  expiresAtUnix: Type.Integer({ description: 'Unix time in seconds: creation second + the TTL of the type.' }),
})
export type CreateListingResult = Static<typeof CreateListingResponse>

export const exampleCreated: CreateListingResult = {
  success: true,
  listingId: '01M7YQ1WE0000000ZDW4J8XG3M',
  expiresAtUnix: 1795260600,
}

export const ListListingsQuery = Type.Object(
  {
    page: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: Number.MAX_SAFE_INTEGER,
        default: 1,
        description: 'Page number, from 1. A page past the end is empty.',
        examples: [2],
      }),
    ),
    limit: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'Listings per page, 1 to 50.', examples: [20] }),
    ),
  },
  closed,
)
export type ListListingsParams = Required<Static<typeof ListListingsQuery>>

export const ListingStatuses = ['active', 'expired'] as const

export const Listing = Type.Object({
  id: Type.String({ description: 'The listingId the create answer gave.' }),
  status: Type.Enum(ListingStatuses, { description: '`active` while now < expiresAtUnix, then `expired`.' }),
  referenceId: Type.String(),
  expiresAtUnix: Type.Integer({ description: 'Unix time in seconds at which the listing expires.' }),
  items: Type.Array(
    Type.Object({
      nameAr: Type.String(),
      nameEn: Type.String(),
      price: Type.Number({ description: 'Exactly as sent.' }),
      quantity: Type.Integer(),
      category: Type.Enum(Categories),
    }),
    { description: 'In the order sent.' },
  ),
  brand: Type.Object({
    nameAr: Type.String(),
    nameEn: Type.String(),
    industry: Type.String({ description: 'Your provider’s industry, set when the provider was created.' }),
  }),
})
export type Listing = Static<typeof Listing>

export const ListingsPage = Type.Object({
  content: Type.Array(Listing, { description: 'Newest first: creation time, then id, descending.' }),
  recordCount: Type.Integer({ description: 'All of your listings, every status.' }),
})
export type ListingsPage = Static<typeof ListingsPage>

export const exampleListingsPage: ListingsPage = {
  recordCount: 21,
  content: [
    {
      id: exampleCreated.listingId,
      status: 'active',
      referenceId: exampleListing.referenceId,
      expiresAtUnix: exampleCreated.expiresAtUnix,
      items: [
        { nameAr: 'كرواسون بالزبدة', nameEn: 'Butter croissant', price: 7.5, quantity: 12, category: 'product' },
        { nameAr: 'قهوة عربية', nameEn: 'Arabic coffee', price: 19.99, quantity: 6, category: 'product' },
        { nameAr: 'توصيل', nameEn: 'Delivery', price: 15, quantity: 1, category: 'service' },
      ],
      brand: { nameAr: 'مخبز الصباح', nameEn: 'Morning Bakery', industry: 'bakery' },
    },
  ],
}
