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
export type FeedEvent = EventsPage['data'][number]
export type ListingEvent = Extract<FeedEvent, { type: `listing.${string}` }>
/** The activity shows the listings' events: a reservation's event carries a reservation, not a listing. */
export const isListingEvent = (event: FeedEvent): event is ListingEvent => event.type.startsWith('listing.')
export type WebhookList = Json<paths['/api/v1/webhooks']['get']['responses'][200]>
export type Webhook = WebhookList['data'][number]
export type DeliveriesPage = Json<paths['/api/v1/webhooks/{webhookId}/deliveries']['get']['responses'][200]>
export type CreateListingBody = paths['/api/v1/listing/create']['post']['requestBody']['content']['application/json']
export type { Problem }

/**
 * The provider this page shows as signed in, sent with its API calls: when the cookie behind them is another
 * provider's (another tab signed in as someone else, or another site set one), the service refuses instead of
 * acting for that provider while the page shows this one.
 */
let shownProvider: string | undefined

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
    if (shownProvider !== undefined) request.headers.set('x-console-provider', shownProvider)
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

async function consoleCall(path: string, method: string, body?: unknown): Promise<SessionInfo | undefined> {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? CSRF_HEADER : { ...CSRF_HEADER, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return response.ok && response.status !== 204 ? ((await response.json()) as SessionInfo) : undefined
}

/** The session the page now stands for (the provider its API calls are checked against). */
function shown(info: SessionInfo | undefined): SessionInfo | undefined {
  shownProvider = info?.provider.id
  return info
}

/** Who is signed in, or undefined. */
export async function currentSession(): Promise<SessionInfo | undefined> {
  return shown(await consoleCall('/console/session', 'GET'))
}

/** Opens a session with a token or a sign-in link's code; undefined when refused. */
export async function signIn(credential: { token: string } | { link: string }): Promise<SessionInfo | undefined> {
  const info = await consoleCall('/console/session', 'POST', credential)
  return info && shown(info)
}

/** Whose a sign-in link is, without spending it; undefined when it is unknown, spent or expired. */
export function linkOwner(code: string): Promise<SessionInfo | undefined> {
  return consoleCall('/console/link-owner', 'POST', { link: code })
}

export async function signOut(): Promise<void> {
  await consoleCall('/console/session', 'DELETE')
  shown(undefined)
}

/** The version an ETag names (`"3"` → 3). */
export function versionOf(response: Response): number | undefined {
  const tag = response.headers.get('etag')
  const match = tag === null ? null : /^(?:W\/)?"(\d+)"$/.exec(tag)
  return match ? Number(match[1]) : undefined
}
