import type { Generated } from 'kysely'

/** Row shapes as stored. Integers that can exceed 2^31 are BIGINT; the drivers return them as numbers. */
export interface ProvidersTable {
  id: string
  name: string
  industry: string
  created_at_ms: number
  /** Number of listings; also the `seq` of the newest one (seqs are dense: 1..listing_count). */
  listing_count: Generated<number>
  /** Creation time of the newest listing: creation times never go backwards within a provider. */
  last_created_ms: Generated<number>
  /** How many listings before the newest share its millisecond: orders ids within one millisecond. */
  last_created_tick: Generated<number>
  /** Number of events; also the `seq` of the newest one (dense, in commit order). */
  event_count: Generated<number>
}

export interface TokensTable {
  id: string
  provider_id: string
  token_hash: string
  created_at_ms: number
  revoked_at_ms: number | null
}

export interface ListingsTable {
  id: string
  provider_id: string
  seq: number
  reference_id: string
  /** SHA-256 of the canonical request body after defaults: decides replay (200) versus conflict (409). */
  request_hash: string
  type: string
  discount_rate: number
  is_assigned_to_driver: number
  latitude: number
  longitude: number
  brand_name_ar: string
  brand_name_en: string
  brand_url_safe_name: string
  brand_image_url: string
  created_at_ms: number
  expires_at_unix: number
  /** Grows by 1 with every change. */
  version: Generated<number>
  updated_at_ms: number
  withdrawn_at_ms: Generated<number | null>
  /** 1 when every item's quantity is 0: derived from the items, kept by the writers for pages and discovery. */
  sold_out: Generated<number>
  /** 1 once the expiry is recorded (its version bump and event). */
  expiry_recorded: Generated<number>
  /** ItemColumns[] as JSON: the one place items are stored. An event keeps its own copy in its snapshot. */
  items_record: string
  /** Discovery's cell of the listing's position (cellOf). */
  cell: number
  /** Held units by position (JSON number[]) of the reservations counted in it; null when none is (reservations/stock.ts). */
  held_record: Generated<string | null>
  /** The earliest expiry of a counted reservation: until then held_record is exact. */
  holds_expire_ms: Generated<number | null>
  /** While now is before it, every item's units are all held: discovery leaves the listing out. */
  full_until_ms: Generated<number | null>
}

/** A reservation: the provider's data (its listing's), keyed by provider_id first. */
export interface ReservationsTable {
  provider_id: string
  id: string
  marketplace_id: string
  reference_id: string
  request_hash: string
  listing_id: string
  /** As stored: `held` stays until the expiry is recorded, though it reads as `expired` from expires_at_ms on. */
  status: 'held' | 'confirmed' | 'released' | 'expired' | 'cancelled'
  version: number
  /** ReservedItem[] as JSON: the lines in the request's order, with the price and names of the moment. */
  items_record: string
  discount_rate: number
  created_at_ms: number
  updated_at_ms: number
  expires_at_ms: number
  ended_by: 'marketplace' | 'provider' | 'listing_withdrawn' | null
  /** 1 while the lines are in the listing's held_record; a write of the listing takes out those run out. */
  counted: number
}

/** A marketplace's own index of its reservations: its referenceIds, and the way to each reservation. */
export interface MarketplaceReservationsTable {
  marketplace_id: string
  reference_id: string
  reservation_id: string
  provider_id: string
  listing_id: string
  created_at_ms: number
}

/** An owner's event stream: a provider's or a marketplace's (events/owner.ts). */
export interface EventsTable {
  id: string
  /** The provider's or marketplace's id. */
  owner_id: string
  /** Dense per owner, in commit order. */
  seq: number
  type: string
  listing_id: string
  created_at_ms: number
  /** Right after the change, as JSON: a listing event's ListingState, else the event's data as sent. */
  snapshot: string
}

export interface WebhookEndpointsTable {
  id: string
  owner_id: string
  url: string
  /** The event types it receives, one bit each. */
  event_mask: number
  status: 'enabled' | 'disabled'
  disabled_reason: string | null
  created_at_ms: number
  /** `whsec_…` as issued: HMAC signing needs the secret itself. */
  secret: string
  /** After a rotation, the secret before it, signing too until previous_secret_until_ms. */
  previous_secret: string | null
  previous_secret_until_ms: number | null
  /** The first failure of the current unbroken run of failed attempts; null after a success. */
  failing_since_ms: number | null
}

/** The deliveries still owed: one leaves the table when it succeeds or fails for good. */
export interface WebhookDeliveriesTable {
  /** `<endpoint_id>:<event_id>`. */
  id: string
  endpoint_id: string
  event_id: string
  owner_id: string
  event_type: string
  attempts: number
  next_attempt_at_ms: number
  /** Claimed by a worker until then; another instance may claim it again after. */
  lease_until_ms: number | null
  created_at_ms: number
}

export interface WebhookAttemptsTable {
  owner_id: string
  endpoint_id: string
  event_id: string
  event_type: string
  attempt: number
  outcome: 'succeeded' | 'failed'
  response_status: number | null
  duration_ms: number
  at_ms: number
  error: string | null
}

export interface MarketplacesTable {
  id: string
  name: string
  created_at_ms: number
  /** Number of events of its stream; also the `seq` of the newest one (dense, in commit order). */
  event_count: Generated<number>
}

/** The same shape and hashing as a provider's tokens. */
export interface MarketplaceTokensTable {
  id: string
  marketplace_id: string
  token_hash: string
  created_at_ms: number
  revoked_at_ms: number | null
}

/** Keys the service signs with, by name. */
export interface ServiceKeysTable {
  name: string
  /** base64url. */
  secret: string
}

/** The provider console's signed-in browsers. */
export interface ConsoleSessionsTable {
  /** SHA-256 of the session cookie's value. */
  id_hash: string
  provider_id: string
  /** The token it was opened with; null when opened by a sign-in link. */
  token_id: string | null
  created_at_ms: number
  last_seen_ms: number
}

/** One-time sign-in links (`listing-service console-link`). */
export interface ConsoleLinksTable {
  /** SHA-256 of the link's code. */
  code_hash: string
  provider_id: string
  created_at_ms: number
  expires_at_ms: number
  used_at_ms: number | null
}

/** Images uploaded by providers (POST /api/v1/images); their bytes are in the image store under `<id>.<ext>`. */
export interface ImagesTable {
  provider_id: string
  /** `img_…`: random, so a removed image's id is never reused. */
  id: string
  /** SHA-256 of the bytes as uploaded: the same bytes uploaded again are this image. */
  upload_hash: string
  format: 'jpeg' | 'png' | 'webp' | 'gif'
  /** Of the image as stored and served. */
  bytes: number
  width: number
  height: number
  created_at_ms: number
  /** The last upload of the same bytes: an image no listing names is removed some days after it. */
  last_used_ms: number
  /** When a listing first named it: from then on it is kept. */
  listed_at_ms: number | null
}

export interface Tables {
  providers: ProvidersTable
  tokens: TokensTable
  listings: ListingsTable
  events: EventsTable
  webhook_endpoints: WebhookEndpointsTable
  webhook_deliveries: WebhookDeliveriesTable
  webhook_attempts: WebhookAttemptsTable
  marketplaces: MarketplacesTable
  reservations: ReservationsTable
  marketplace_reservations: MarketplaceReservationsTable
  marketplace_tokens: MarketplaceTokensTable
  service_keys: ServiceKeysTable
  console_sessions: ConsoleSessionsTable
  console_links: ConsoleLinksTable
  images: ImagesTable
}
