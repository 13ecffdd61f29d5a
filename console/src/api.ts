import { createListingClient, type paths, type Problem } from '../../clients/typescript/index'

/**
 * The console is a client of the public API like any integrator's, through the repository's typed client. The
 * browser holds no token: its HttpOnly session cookie goes with every same-origin request, and the header below
 * is the anti-CSRF proof the service asks of cookie-authenticated requests (README, "The provider console").
 */
export const CSRF_HEADER = { 'x-console-session': '1' }

export const api = createListingClient({ baseUrl: location.origin })

type Json<T> = T extends { content: { 'application/json': infer B } } ? B : never
export type ListingView = Json<paths['/api/v1/listing/{listingId}']['get']['responses'][200]>
export type ListingsPage = Json<paths['/api/v1/listing']['get']['responses'][200]>
export type ListingSummary = ListingsPage['content'][number]
export type EventsPage = Json<paths['/api/v1/events']['get']['responses'][200]>
export type ListingEvent = EventsPage['data'][number]
export type WebhookList = Json<paths['/api/v1/webhooks']['get']['responses'][200]>
export type Webhook = WebhookList['data'][number]
export type DeliveriesPage = Json<paths['/api/v1/webhooks/{webhookId}/deliveries']['get']['responses'][200]>
export type CreateListingBody = paths['/api/v1/listing/create']['post']['requestBody']['content']['application/json']
export type { Problem }

const sessionEndedListeners = new Set<() => void>()

/** Called when the service answers 401 to an API call: the session ended (signed out, idle, token revoked). */
export function onSessionEnded(listener: () => void): () => void {
  sessionEndedListeners.add(listener)
  return () => sessionEndedListeners.delete(listener)
}

/** Tells the page that the service answered 401 to a call made outside the typed client (a photo upload). */
export function sessionEnded(): void {
  for (const listener of sessionEndedListeners) listener()
}

api.use({
  onRequest({ request }) {
    request.headers.set('x-console-session', '1')
    return request
  },
  onResponse({ response }) {
    if (response.status === 401) sessionEnded()
    return response
  },
})

export interface SessionInfo {
  provider: { id: string; name: string }
}

async function sessionCall(method: string, body?: unknown): Promise<Response> {
  return fetch('/console/session', {
    method,
    headers: body === undefined ? CSRF_HEADER : { ...CSRF_HEADER, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

/** Who is signed in, or undefined. */
export async function currentSession(): Promise<SessionInfo | undefined> {
  const response = await sessionCall('GET')
  return response.ok ? ((await response.json()) as SessionInfo) : undefined
}

/** Opens a session with a token or a sign-in link's code; undefined when refused. */
export async function signIn(credential: { token: string } | { link: string }): Promise<SessionInfo | undefined> {
  const response = await sessionCall('POST', credential)
  return response.ok ? ((await response.json()) as SessionInfo) : undefined
}

export async function signOut(): Promise<void> {
  await sessionCall('DELETE')
}

/** The version an ETag names (`"3"` → 3). */
export function versionOf(response: Response): number | undefined {
  const tag = response.headers.get('etag')
  const match = tag === null ? null : /^(?:W\/)?"(\d+)"$/.exec(tag)
  return match ? Number(match[1]) : undefined
}
