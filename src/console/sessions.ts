import { createHash, randomBytes } from 'node:crypto'
import type { Config } from '../config.js'
import type { Database } from '../db/connection.js'
import type { Provider } from '../providers/repository.js'
import { hashToken, isWellFormedToken } from '../providers/tokens.js'

/** Spec: a session ends after 12 hours without a request. */
export const SESSION_IDLE_MS = 12 * 60 * 60 * 1000
/** Spec: a sign-in link works once, within 15 minutes. */
export const LINK_LIFETIME_MS = 15 * 60 * 1000
/**
 * last_seen_ms is written again only when it is older than this, so a busy console costs no write per request;
 * the idle bound is then late by at most this much.
 */
const TOUCH_AFTER_MS = 60 * 1000

/** 32 random bytes: a session id or link code cannot be guessed, so an unsalted SHA-256 is the right store. */
function newSecret(): { secret: string; hash: string } {
  const secret = randomBytes(32).toString('base64url')
  return { secret, hash: sha256(secret) }
}

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')

const SECRET_SHAPE = /^[A-Za-z0-9_-]{43}$/

export interface SignedIn {
  /** The cookie's value: given to the browser once, stored only as its hash. */
  sessionId: string
  provider: Provider
}

/** The console's sessions and sign-in links, in the database so that every instance agrees on them. */
export class ConsoleSessions {
  /** However much a session is used, it ends this long after sign-in: a link session has no token to revoke. */
  readonly #maxLifetimeMs: number

  constructor(
    private readonly database: Database,
    config: Pick<Config, 'CONSOLE_SESSION_MAX_HOURS'>,
  ) {
    this.#maxLifetimeMs = config.CONSOLE_SESSION_MAX_HOURS * 60 * 60 * 1000
  }

  /** A session for a provider's valid token; undefined for an unknown, revoked or marketplace token. */
  async signInWithToken(token: string, nowMs: number): Promise<SignedIn | undefined> {
    if (!isWellFormedToken(token)) return undefined
    // Only the tokens table: a marketplace's token (marketplace_tokens) can never open a session.
    const row = await this.database.kysely
      .selectFrom('tokens as t')
      .innerJoin('providers as p', 'p.id', 't.provider_id')
      .select(['t.id as tokenId', 'p.id', 'p.name', 'p.industry'])
      .where('t.token_hash', '=', hashToken(token))
      .where('t.revoked_at_ms', 'is', null)
      .executeTakeFirst()
    if (!row) return undefined
    return this.open({ id: row.id, name: row.name, industry: row.industry }, row.tokenId, nowMs)
  }

  /**
   * Whose link it is, without spending it: the page shows this and waits for a click, so that opening a link (sent
   * by someone else, or fetched by a scanner that runs scripts) signs no one in.
   */
  async linkOwner(code: string, nowMs: number): Promise<Provider | undefined> {
    if (!SECRET_SHAPE.test(code)) return undefined
    return this.database.kysely
      .selectFrom('console_links as l')
      .innerJoin('providers as p', 'p.id', 'l.provider_id')
      .select(['p.id', 'p.name', 'p.industry'])
      .where('l.code_hash', '=', sha256(code))
      .where('l.used_at_ms', 'is', null)
      .where('l.expires_at_ms', '>', nowMs)
      .executeTakeFirst()
  }

  /** Spends a sign-in link: a session for its provider, or undefined when it is unknown, spent or expired. */
  async signInWithLink(code: string, nowMs: number): Promise<SignedIn | undefined> {
    if (!SECRET_SHAPE.test(code)) return undefined
    const codeHash = sha256(code)
    // One conditional update: of two uses at once, on any instances, exactly one changes the row.
    const spent = await this.database.writer
      .updateTable('console_links')
      .set({ used_at_ms: nowMs })
      .where('code_hash', '=', codeHash)
      .where('used_at_ms', 'is', null)
      .where('expires_at_ms', '>', nowMs)
      .executeTakeFirst()
    if (Number(spent.numUpdatedRows) !== 1) return undefined
    const provider = await this.database.kysely
      .selectFrom('console_links as l')
      .innerJoin('providers as p', 'p.id', 'l.provider_id')
      .select(['p.id', 'p.name', 'p.industry'])
      .where('l.code_hash', '=', codeHash)
      .executeTakeFirst()
    return provider && this.open(provider, null, nowMs)
  }

  private async open(provider: Provider, tokenId: string | null, nowMs: number): Promise<SignedIn> {
    const { secret, hash } = newSecret()
    await this.database.writer
      .insertInto('console_sessions')
      .values({ id_hash: hash, provider_id: provider.id, token_id: tokenId, created_at_ms: nowMs, last_seen_ms: nowMs })
      .execute()
    // Housekeeping where it costs nothing noticeable: a sign-in is rare.
    await this.removeStale(nowMs)
    return { sessionId: secret, provider }
  }

  /**
   * The provider a session cookie stands for, while the session is alive: not signed out or revoked, not idle for
   * 12 h, not older than its maximum lifetime, and its token (if it has one) not revoked. Read from the database on
   * every call, never cached, so a revocation or a sign-out on any instance counts at once.
   */
  async resolve(sessionId: string, nowMs: number): Promise<Provider | undefined> {
    if (!SECRET_SHAPE.test(sessionId)) return undefined
    const idHash = sha256(sessionId)
    const row = await this.database.kysely
      .selectFrom('console_sessions as s')
      .innerJoin('providers as p', 'p.id', 's.provider_id')
      .select(['p.id', 'p.name', 'p.industry', 's.last_seen_ms'])
      .where('s.id_hash', '=', idHash)
      .where('s.last_seen_ms', '>', nowMs - SESSION_IDLE_MS)
      .where('s.created_at_ms', '>', nowMs - this.#maxLifetimeMs)
      .where((eb) =>
        eb.or([
          eb('s.token_id', 'is', null),
          eb.exists(eb.selectFrom('tokens as t').select('t.id').whereRef('t.id', '=', 's.token_id').where('t.revoked_at_ms', 'is', null)),
        ]),
      )
      .executeTakeFirst()
    if (!row) return undefined
    if (nowMs - row.last_seen_ms >= TOUCH_AFTER_MS) {
      await this.database.writer.updateTable('console_sessions').set({ last_seen_ms: nowMs }).where('id_hash', '=', idHash).execute()
    }
    return { id: row.id, name: row.name, industry: row.industry }
  }

  async signOut(sessionId: string): Promise<void> {
    if (!SECRET_SHAPE.test(sessionId)) return
    await this.database.writer.deleteFrom('console_sessions').where('id_hash', '=', sha256(sessionId)).execute()
  }

  /**
   * `listing-service console-sessions revoke`: ends every session of the provider, and spends its links not yet
   * used, so that no browser is signed in as it afterwards without a new token or link.
   */
  async revokeProvider(providerId: string, nowMs: number): Promise<{ sessions: number; links: number }> {
    // Two single statements, links first: a session opened from a link meanwhile is then among those deleted.
    const links = await this.database.writer
      .updateTable('console_links')
      .set({ used_at_ms: nowMs })
      .where('provider_id', '=', providerId)
      .where('used_at_ms', 'is', null)
      .executeTakeFirst()
    const sessions = await this.database.writer.deleteFrom('console_sessions').where('provider_id', '=', providerId).executeTakeFirst()
    return { sessions: Number(sessions.numDeletedRows), links: Number(links.numUpdatedRows) }
  }

  /** A one-time sign-in link's code for a provider (the CLI's `console-link`); stored only as its hash. */
  async createLink(providerId: string, nowMs: number): Promise<{ code: string; expiresAtMs: number }> {
    const { secret, hash } = newSecret()
    const expiresAtMs = nowMs + LINK_LIFETIME_MS
    await this.database.writer
      .insertInto('console_links')
      .values({ code_hash: hash, provider_id: providerId, created_at_ms: nowMs, expires_at_ms: expiresAtMs, used_at_ms: null })
      .execute()
    return { code: secret, expiresAtMs }
  }

  private async removeStale(nowMs: number): Promise<void> {
    await this.database.writer
      .deleteFrom('console_sessions')
      .where('last_seen_ms', '<=', nowMs - SESSION_IDLE_MS)
      .execute()
    await this.database.writer.deleteFrom('console_links').where('expires_at_ms', '<=', nowMs).execute()
  }
}
