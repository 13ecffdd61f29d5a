import { Type, type Static } from 'typebox'
import { named, ref } from '../http/components.js'
import { MAX_ENTITY_TAGS_LENGTH } from '../http/conditional.js'

/* These schemas are also the OpenAPI document: their descriptions and examples are what integrators read. */

const closed = { additionalProperties: false } as const

// Custom formats mean nothing to a generic OpenAPI tool, so each description says what its format checks.
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
    'first bytes) of at most 5 MiB (IMAGE_MAX_BYTES) on a public address; or the url of a photo you uploaded (POST ' +
    '/api/v1/images), looked up instead. Format `http-url`: an absolute http or https URL without a user name or password.',
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
    quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'Units offered, 1 to 1,000,000.' })),
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
named('CreateListingResponse', CreateListingResponse)
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
        examples: [1],
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, default: 10, description: 'Listings per page, 1 to 50.', examples: [20] })),
  },
  closed,
)
export type ListListingsParams = Required<Static<typeof ListListingsQuery>>

export const ListingStatuses = ['active', 'sold_out', 'expired', 'withdrawn'] as const

const STATUS_DESCRIPTION =
  '`withdrawn` (set by you, final) wins over `expired` (now ≥ expiresAtUnix), which wins over `sold_out` (every ' +
  'item’s quantity is 0), which wins over `active`.'

export const Listing = Type.Object({
  id: Type.String({ description: 'The listingId the create answer gave.' }),
  status: Type.Enum(ListingStatuses, { description: STATUS_DESCRIPTION }),
  referenceId: Type.String(),
  expiresAtUnix: Type.Integer({ description: 'Unix time in seconds at which the listing expires.' }),
  items: Type.Array(
    Type.Object({
      nameAr: Type.String(),
      nameEn: Type.String(),
      price: Type.Number({ description: 'Exactly as sent, or as last changed.' }),
      quantity: Type.Integer({ description: 'As sent, or as last changed; 0 when none is left.' }),
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
named('ListingsPage', ListingsPage)
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

// ---- One listing, as read ----

/** As `Date.prototype.toISOString` writes it. */
export const Timestamp = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
  description: 'UTC, to the millisecond (RFC 3339).',
  examples: ['2026-11-22T10:00:00.123Z'],
})

const ListingItemView = Type.Object(
  {
    position: Type.Integer({ minimum: 0, description: 'The item’s index in the created order; PATCH names items by it.' }),
    nameAr: Type.String(),
    nameEn: Type.String(),
    price: Type.Number({ description: 'Unit price, exactly as sent or last changed.' }),
    quantity: Type.Integer({ minimum: 0, description: 'Units left; 0 when none is.' }),
    category: Type.Enum(Categories),
    subCategory: Type.Enum(SubCategories),
    urlSafeName: Type.String(),
    imageUrl: Type.Optional(Type.String({ description: 'Present only when the item was created with one.' })),
  },
  closed,
)
named('ListingItemView', ListingItemView)

const ListingLocationView = named('ListingLocationView', Type.Object({ latitude: Type.Number(), longitude: Type.Number() }, closed))

const ListingBrandView = named(
  'ListingBrandView',
  Type.Object(
    {
      nameAr: Type.String(),
      nameEn: Type.String(),
      industry: Type.String({ description: 'The provider’s industry, set when the provider was created.' }),
      urlSafeName: Type.String(),
      imageUrl: Type.String(),
    },
    closed,
  ),
)

const ListingDetailsView = named(
  'ListingDetailsView',
  Type.Object({ discountRate: Type.Number(), type: Type.Enum(ListingTypes), isAssignedToDriver: Type.Boolean() }, closed),
)

export const ListingView = Type.Object(
  {
    id: Type.String({ description: 'The listingId the create answer gave.' }),
    status: Type.Enum(ListingStatuses, { description: STATUS_DESCRIPTION }),
    referenceId: Type.String(),
    version: Type.Integer({
      minimum: 1,
      description:
        'Starts at 1 and grows by 1 with every change: a PATCH that changes something, the withdrawal, and the ' +
        'expiry (counted from the moment of expiry, whether or not its event has been sent yet). The ETag is ' +
        'this number in quotes.',
    }),
    createdAt: Timestamp,
    updatedAt: { ...Timestamp, description: 'When the last change happened (for an expired listing: the moment it expired).' },
    expiresAtUnix: Type.Integer({ description: 'Unix time in seconds at which the listing expires.' }),
    location: ref(ListingLocationView),
    brand: ref(ListingBrandView),
    listingDetails: ref(ListingDetailsView),
    items: Type.Array(ref(ListingItemView), { description: 'In the order sent; `position` is the index.' }),
  },
  { ...closed, description: 'A listing with every value as created or last changed.' },
)
named('ListingView', ListingView)
export type ListingView = Static<typeof ListingView>

export const exampleListingView: ListingView = {
  id: exampleCreated.listingId,
  status: 'active',
  referenceId: exampleListing.referenceId,
  version: 2,
  createdAt: '2026-11-22T10:00:00.123Z',
  updatedAt: '2026-11-22T10:05:00.000Z',
  expiresAtUnix: exampleCreated.expiresAtUnix,
  location: exampleListing.location,
  brand: {
    nameAr: exampleListing.brand.displayName.ar,
    nameEn: exampleListing.brand.displayName.en,
    industry: 'bakery',
    urlSafeName: exampleListing.brand.urlSafeName,
    imageUrl: exampleListing.brand.imageUrl,
  },
  listingDetails: { discountRate: 0.6, type: 'timed', isAssignedToDriver: true },
  items: exampleListing.items.map((item, position) => ({
    position,
    nameAr: item.displayName.ar,
    nameEn: item.displayName.en,
    price: item.price,
    quantity: position === 0 ? 0 : (item.quantity ?? 1),
    category: item.category as (typeof Categories)[number],
    subCategory: item.subCategory as (typeof SubCategories)[number],
    urlSafeName: item.urlSafeName,
    ...(item.imageUrl === undefined ? {} : { imageUrl: item.imageUrl }),
  })),
}

export const ListingIdParams = Type.Object(
  { listingId: Type.String({ description: 'The listingId the create answer gave.', examples: [exampleCreated.listingId] }) },
  closed,
)

export const ReferenceIdParams = Type.Object(
  {
    referenceId: Type.String({
      description: 'Your referenceId, percent-encoded as a path segment (`/` is `%2F`).',
      examples: [exampleListing.referenceId],
    }),
  },
  closed,
)

/** `If-Match` on a change (RFC 9110 §13.1.1): `description` says what it guards, the format follows. */
export const ifMatchHeaders = (description: string) =>
  Type.Object({
    'if-match': Type.Optional(
      Type.String({
        format: 'entity-tags',
        maxLength: MAX_ENTITY_TAGS_LENGTH,
        description: `${description} Format \`entity-tags\`: \`*\` or a comma-separated list of entity tags.`,
        examples: ['"1"'],
      }),
    ),
  })

/** On PATCH and withdraw. */
export const IfMatchHeaders = ifMatchHeaders(
  'Apply the change only if the listing’s current version is this one: its ETag, e.g. `"3"` (a list of ' +
    'them, or `*`, also works). Otherwise `412` and nothing changes. Without it the change applies to ' +
    'whatever the current version is.',
)

/** `If-None-Match` on reads (RFC 9110 §13.1.2). */
export const IfNoneMatchHeaders = Type.Object({
  'if-none-match': Type.Optional(
    Type.String({
      format: 'entity-tags',
      maxLength: MAX_ENTITY_TAGS_LENGTH,
      description:
        'The ETag of the representation you have: when it is still the current one the answer is `304` with no ' +
        'body (weak comparison; `*` matches anything). Format `entity-tags`: `*` or a comma-separated list of ' +
        'entity tags.',
      // No representation has this tag: "Try it out" on /docs gets the body, not a 304.
      examples: ['"0"'],
    }),
  ),
})

export const PatchListingBody = Type.Object(
  {
    listingDetails: Type.Optional(
      Type.Object(
        {
          discountRate: Type.Number({
            minimum: 0.1,
            maximum: 1,
            description: 'The new discount as a fraction of the price: 0.1 (10 %) to 1 (100 %).',
          }),
        },
        closed,
      ),
    ),
    items: Type.Optional(
      Type.Array(
        Type.Object(
          {
            position: Type.Integer({
              minimum: 0,
              maximum: 99,
              description: 'Which item: its index in the created order. Each position at most once per request.',
            }),
            quantity: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Units left, 0 to 1,000,000; 0 means none is left.' })),
            price: Type.Optional(
              Type.Number({
                minimum: 1,
                maximum: 1_000_000_000,
                multipleOf: 0.001,
                description: 'The new unit price, as at create: 1 to 1,000,000,000, at most 3 decimal places.',
              }),
            ),
          },
          { ...closed, description: 'Changes to one item: `quantity`, `price` or both.' },
        ),
        { minItems: 1, maxItems: 100 },
      ),
    ),
  },
  {
    ...closed,
    description: 'At least one of `listingDetails.discountRate`, `items[].quantity`, `items[].price`. Values equal to the current ones change nothing.',
    examples: [
      {
        listingDetails: { discountRate: 0.6 },
        items: [
          { position: 0, quantity: 0 },
          { position: 1, price: 9.5 },
        ],
      },
    ],
  },
)
export type PatchListingInput = Static<typeof PatchListingBody>
