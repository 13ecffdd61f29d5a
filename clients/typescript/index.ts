import createClient, { type Client, type ClientOptions, type FetchResponse } from 'openapi-fetch'
import type { components, paths } from './api.js'

/**
 * A typed client for the listing service, generated from its OpenAPI document (api.d.ts, by openapi-typescript)
 * and called through openapi-fetch: paths, parameters, bodies and answers are all typed, problems included.
 *
 *   const client = createListingClient({ baseUrl: 'http://127.0.0.1:3000', token: process.env.TOKEN })
 *   const { data, error } = await client.GET('/api/v1/listing/{listingId}', { params: { path: { listingId } } })
 *   if (error) console.log(error.type, error.errors)   // a Problem (RFC 9457), typed
 *
 * or, to have a problem thrown as a ProblemError: `const listing = await unwrap(client.GET(…))`.
 */

export type { components, paths }
export type Problem = components['schemas']['Problem']
export type ListingClient = Client<paths>

export interface ListingClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  baseUrl: string
  /** `lst_…`: a provider's (or a marketplace's) token. */
  token?: string
}

export function createListingClient({ token, ...options }: ListingClientOptions): ListingClient {
  const client = createClient<paths>(options)
  if (token !== undefined) {
    client.use({
      onRequest({ request }) {
        request.headers.set('authorization', `Bearer ${token}`)
        return request
      },
    })
  }
  return client
}

/** A problem the service answered with (any status of 400 or more), thrown by unwrap(). */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
  ) {
    super(`${status} ${problem.type}: ${problem.detail}`)
    this.name = 'ProblemError'
  }
}

/** The answer's data, or a ProblemError when the service answered with a problem. */
export async function unwrap<T extends Record<string | number, unknown>, O, M extends `${string}/${string}`>(
  answer: Promise<FetchResponse<T, O, M>>,
): Promise<NonNullable<FetchResponse<T, O, M>['data']>> {
  const { data, error, response } = await answer
  if (error !== undefined) throw new ProblemError(response.status, error)
  return data as NonNullable<FetchResponse<T, O, M>['data']>
}
