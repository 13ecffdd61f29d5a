import type { Config } from '../config.js'
import type { Database } from '../db/connection.js'
import { ConsoleSessions } from './sessions.js'

/** Where browsers reach the service: PUBLIC_BASE_URL, else http://HOST:PORT (a wildcard bind as loopback). */
export function publicBaseUrl(config: Pick<Config, 'PUBLIC_BASE_URL' | 'HOST' | 'PORT'>): string {
  if (config.PUBLIC_BASE_URL !== undefined) return config.PUBLIC_BASE_URL.replace(/\/$/, '')
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST
  return `http://${host}:${config.PORT}`
}

/**
 * `listing-service console-link --provider <id>`: a link that signs the provider in once, within 15 minutes.
 * The code travels in the fragment, which browsers never send: it stays out of access logs, proxies and Referer
 * headers. The page takes it out of the address bar, shows whose link it is, and spends it only on a click.
 */
export async function signInLink(
  database: Database,
  config: Pick<Config, 'PUBLIC_BASE_URL' | 'HOST' | 'PORT' | 'CONSOLE_SESSION_MAX_HOURS'>,
  providerId: string,
  nowMs: number,
): Promise<{ url: string; expiresAt: string }> {
  const { code, expiresAtMs } = await new ConsoleSessions(database, config).createLink(providerId, nowMs)
  return { url: `${publicBaseUrl(config)}/console/link#${code}`, expiresAt: new Date(expiresAtMs).toISOString() }
}
