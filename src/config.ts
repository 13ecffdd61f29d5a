import { Type, type Static, type TSchema } from 'typebox'
import { Ajv } from 'ajv'

/** Validates the environment, types `Config`, and generates the documented variable table (npm run docs:config). */
export const ConfigSchema = Type.Object(
  {
    PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'TCP port' }),
    HOST: Type.String({
      minLength: 1,
      default: '127.0.0.1',
      description: 'bind address (`0.0.0.0` in containers)',
    }),
    DATABASE_URL: Type.String({
      pattern: '^(sqlite:.+|postgres(ql)?://.+)$',
      default: 'sqlite:./data/listings.db',
      description: '`sqlite:<path>`, `sqlite::memory:`, or `postgres://…` / `postgresql://…`',
    }),
    DATABASE_READ_URL: Type.Optional(
      Type.String({
        pattern: '^postgres(ql)?://.+',
        description:
          'PostgreSQL only: a hot standby (or a pooler in front of standbys) that the read routes use while it has replayed ' +
          "the asking provider's writes, else they read the primary (docs/postgresql.md#reads-from-a-standby); writes, " +
          'migrations and background work stay on `DATABASE_URL`',
      }),
    ),
    DATABASE_POOLER_PREPARES: Type.Boolean({
      default: false,
      description:
        '`true` when the PostgreSQL pooler at `DATABASE_URL` (and `DATABASE_READ_URL`) keeps prepared statements in ' +
        'transaction mode: PgBouncer 1.21 or later with `max_prepared_statements` above 0 (docs/postgresql.md#pgbouncer). ' +
        'Statements are then prepared by name through it, as on a direct connection. `false`: through a pooler every ' +
        'statement goes unnamed, and is planned on every execution',
    }),
    LISTING_TTL_TIMED_SECONDS: Type.Integer({
      minimum: 1,
      default: 7200,
      description: 'lifetime of a `timed` listing',
    }),
    LISTING_TTL_PRIORITY_TIMED_SECONDS: Type.Integer({
      minimum: 1,
      default: 3600,
      description: 'lifetime of a `priority_timed` listing',
    }),
    IMAGE_MAX_BYTES: Type.Integer({
      minimum: 1,
      default: 5242880,
      description: 'largest accepted image (5 MiB), inclusive',
    }),
    IMAGE_FETCH_TIMEOUT_MS: Type.Integer({
      minimum: 1,
      default: 5000,
      description:
        "whole budget for fetching one image, body included; also bounds a create's whole wait for its images, " +
        'waiting for a free fetch included (images not checked by then are `400` `image-unavailable`)',
    }),
    IMAGE_QUEUE_PER_PROVIDER: Type.Integer({
      // A create names at most 101 images (brand and 100 items): one must always fit.
      minimum: 101,
      default: 2048,
      description:
        "most images one provider's creates may be waiting on at once (from the start of each create's image " +
        'check to its end), a bound on memory; before it, a create whose images would not be checked within ' +
        "`IMAGE_FETCH_TIMEOUT_MS` (judged by how long the provider's fetches take) is refused with `429` and `Retry-After`",
    }),
    IMAGE_MAX_PIXELS: Type.Integer({
      minimum: 1,
      default: 40000000,
      description: 'largest uploaded image in pixels (width × height), judged from its header before any pixel is decoded',
    }),
    IMAGE_MAX_EDGE: Type.Integer({
      minimum: 16,
      default: 2048,
      description: 'an uploaded image larger than this on its longer side is scaled down to it',
    }),
    IMAGE_UPLOADS_IN_FLIGHT: Type.Integer({
      minimum: 1,
      default: 4,
      description:
        'uploads decoded at once per instance; up to eight times as many may wait (each at most `IMAGE_FETCH_TIMEOUT_MS`), ' +
        'more are `503` with `Retry-After`',
    }),
    IMAGE_STORE_URL: Type.String({
      pattern: '^(file:.+|s3://[^/?#]+(/[^?#]*)?)$',
      default: 'file:./data/images',
      description:
        'where uploaded images are kept: `file:<directory>`, or `s3://<bucket>[/prefix]` for an S3-compatible store that every ' +
        'instance shares (credentials and region from the usual `AWS_*` variables)',
    }),
    S3_ENDPOINT: Type.Optional(
      Type.String({
        pattern: '^https?://.+',
        description: 'an S3-compatible server other than AWS (`https://minio.internal:9000`), addressed path-style; unset: AWS S3',
      }),
    ),
    AWS_REGION: Type.Optional(Type.String({ minLength: 1, description: "the S3 bucket's region; unset: `us-east-1`" })),
    IMAGE_UNUSED_DAYS: Type.Integer({
      minimum: 1,
      default: 7,
      description: 'an uploaded image that no listing names is removed this many days after its last upload',
    }),
    IMAGE_ALLOW_PRIVATE_NETWORKS: Type.Boolean({
      default: false,
      description: '`true` lets images come from loopback/private addresses (development and tests only)',
    }),
    RESERVATION_HOLD_SECONDS: Type.Integer({
      minimum: 30,
      maximum: 3600,
      default: 600,
      description: 'how long a reservation holds its units when the request names no `holdSeconds`, 30 to 3600',
    }),
    RATE_LIMIT_PER_MINUTE: Type.Integer({
      minimum: 0,
      default: 600,
      description: 'requests per minute per provider or marketplace on `/api/v1/*`; `0` disables',
    }),
    PUBLIC_RATE_LIMIT_PER_MINUTE: Type.Integer({
      minimum: 0,
      default: 120,
      description:
        'requests per minute per client address, counted by each instance, on the routes without a token ' +
        "(`/openapi.json`, `/docs`, `/metrics`, the console's `POST /console/session` and `POST /console/link-owner`; " +
        'not the health probes); `0` disables',
    }),
    METRICS_PORT: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 65535,
        description: 'when set, `/metrics` is served on this port (same `HOST`) instead of `PORT`, so it need not face clients',
      }),
    ),
    REDIS_URL: Type.Optional(
      Type.String({
        pattern: '^rediss?://.+',
        description: 'when set, rate-limit counters are shared through Redis by every instance',
      }),
    ),
    HTTP_HEADERS_TIMEOUT_MS: Type.Integer({
      minimum: 1,
      default: 10000,
      description: "longest a client may take to send a request's headers; then `408` and the connection is closed (slowloris)",
    }),
    HTTP_REQUEST_TIMEOUT_MS: Type.Integer({
      minimum: 1,
      default: 30000,
      description:
        'longest a client may take to send a whole request, body included (at least `HTTP_HEADERS_TIMEOUT_MS`); ' +
        'then `408` and the connection is closed. Bounds receiving only: answering may take longer',
    }),
    HTTP_KEEP_ALIVE_TIMEOUT_MS: Type.Integer({
      minimum: 1,
      default: 72000,
      description:
        'how long an idle keep-alive connection stays open; above the 60 s idle timeout of common load ' +
        'balancers, so a balancer never reuses a connection the service is closing',
    }),
    EVENT_RETENTION_DAYS: Type.Integer({
      minimum: 1,
      default: 30,
      description: 'events (the feed) and the webhook delivery log are kept at least this many days',
    }),
    WEBHOOK_TIMEOUT_MS: Type.Integer({
      minimum: 1,
      default: 10000,
      description: 'a webhook attempt succeeds on a `2xx` within this many milliseconds, body sent and status received',
    }),
    WEBHOOK_RETRY_SCHEDULE: Type.String({
      pattern: '^\\d{1,7}(,\\d{1,7}){0,49}$',
      default: '5,300,1800,7200,18000,36000,50400,72000,86400',
      description:
        'seconds to wait before each retry of a failed webhook attempt (each up to 10 % later), comma-separated; ' + 'after the last, the delivery has failed',
    }),
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: Type.Boolean({
      default: false,
      description: '`true` lets webhooks reach loopback/private addresses (development and tests only)',
    }),
    PUBLIC_BASE_URL: Type.Optional(
      Type.String({
        pattern: '^https?://[^/?#]+/?$',
        description:
          'the address browsers reach the service at (`https://listings.example.com`, no path), used in the console ' +
          'sign-in links `console-link` prints and in the urls of uploaded images; unset: `http://HOST:PORT`. An `https` ' +
          "address also makes the console's cookie `Secure` and `__Host-` named, and its answers carry HSTS",
      }),
    ),
    TRUST_PROXY: Type.Boolean({
      default: false,
      description:
        '`true` when every request reaches the service through a reverse proxy that sets or appends ' +
        "`X-Forwarded-Proto`: its last value then says whether the browser used HTTPS (the console's cookie is then " +
        "`Secure` and `__Host-` named, and its answers carry HSTS). `false`: the header is any client's to write, and " +
        "is ignored. Client addresses (rate limits) stay the socket's",
    }),
    CONSOLE_SESSION_MAX_HOURS: Type.Integer({
      minimum: 1,
      default: 168,
      description:
        'a console session ends this many hours after sign-in however much it is used (besides 12 hours without a ' +
        'request, sign-out, revoking its token, or `console-sessions revoke`)',
    }),
    LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
      default: 'info',
      description: 'pino level',
    }),
  },
  { additionalProperties: false },
)

export type Config = Readonly<Static<typeof ConfigSchema>>

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type FieldSchema = TSchema & {
  type?: string
  minimum?: number
  maximum?: number
  enum?: string[]
  description?: string
}

const fields = ConfigSchema.properties as Record<string, FieldSchema>

/** What a variable accepts, in words, for the one stderr line that stops a bad start-up. */
function accepted(schema: FieldSchema): string {
  if (schema.enum) return `one of ${schema.enum.join(', ')}`
  if (schema.type === 'boolean') return 'true or false'
  if (schema.type === 'integer') {
    return schema.maximum === undefined ? `an integer >= ${schema.minimum}` : `an integer from ${schema.minimum} to ${schema.maximum}`
  }
  return schema.description ?? 'a non-empty string'
}

/** Without the loose coercions a generic coercer allows: " 1", "0x10" and "1e3" are not ports. */
function fromEnvString(schema: FieldSchema, raw: string): unknown {
  if (schema.type === 'integer') return /^-?\d{1,15}$/.test(raw) ? Number(raw) : raw
  if (schema.type === 'boolean') return raw === 'true' ? true : raw === 'false' ? false : raw
  return raw
}

const validate = new Ajv({ allErrors: false, useDefaults: true, strict: true }).compile(ConfigSchema)

/** Reads the configuration from an environment; throws ConfigError naming the first bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const values: Record<string, unknown> = {}
  for (const [name, schema] of Object.entries(fields)) {
    const raw = env[name]
    // An empty variable (`PORT=`) means "not set", as shells and compose files commonly produce it.
    if (raw !== undefined && raw !== '') values[name] = fromEnvString(schema, raw)
  }
  if (!validate(values)) {
    const error = validate.errors?.[0]
    const name = error?.instancePath.slice(1) ?? 'configuration'
    const schema = fields[name]
    // URLs can carry passwords: name the variable but never echo its value.
    const shown = name.endsWith('_URL') ? '' : ` (got ${JSON.stringify(env[name])})`
    throw new ConfigError(`${name} must be ${schema ? accepted(schema) : 'valid'}${shown}`)
  }
  // Node refuses a headers timeout longer than the whole-request timeout; say so in our words, before listening.
  if ((values.HTTP_HEADERS_TIMEOUT_MS as number) > (values.HTTP_REQUEST_TIMEOUT_MS as number)) {
    throw new ConfigError(
      `HTTP_HEADERS_TIMEOUT_MS must be at most HTTP_REQUEST_TIMEOUT_MS (got ${values.HTTP_HEADERS_TIMEOUT_MS} > ${values.HTTP_REQUEST_TIMEOUT_MS})`,
    )
  }
  // Refused rather than ignored: an operator who set it expects reads to leave the primary, and SQLite has no standby.
  if (values.DATABASE_READ_URL !== undefined && !/^postgres(ql)?:\/\//.test(values.DATABASE_URL as string)) {
    throw new ConfigError('DATABASE_READ_URL needs a PostgreSQL DATABASE_URL: SQLite has no standby to read from')
  }
  return Object.freeze(values as Config)
}

/** WEBHOOK_RETRY_SCHEDULE as the delays it lists, in milliseconds (the schema has checked its shape). */
export function retryDelaysMs(config: Pick<Config, 'WEBHOOK_RETRY_SCHEDULE'>): number[] {
  return config.WEBHOOK_RETRY_SCHEDULE.split(',').map((seconds) => Number(seconds) * 1000)
}
