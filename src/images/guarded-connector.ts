import { lookup as dnsLookup } from 'node:dns'
import { buildConnector } from 'undici'
import type { AddressPolicy } from './address-policy.js'
import { ipLiteral } from './address-policy.js'

/** How a host name becomes addresses; tests pass their own to stand in for DNS. */
export type Resolver = (hostname: string) => Promise<string[]>

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses.map((a) => a.address))))
  })

/** Raised instead of connecting to an address the policy refuses; the address is never contacted. */
export class ForbiddenAddressError extends Error {
  readonly code = 'ERR_FORBIDDEN_ADDRESS'
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, which is not a public address`)
  }
}

/** The host could not be resolved to any address. */
export class UnresolvableHostError extends Error {
  readonly code = 'ERR_UNRESOLVABLE_HOST'
  constructor(readonly host: string) {
    super(`${host} could not be resolved`)
  }
}

/**
 * An undici connector that decides where to connect itself: it resolves the host, keeps only addresses the
 * policy allows, and connects to the first of those by IP (TLS still verifies the original name). Because the
 * checked address is the connected address, a DNS answer that changes between check and connect (rebinding)
 * has nothing to exploit. The socket's remote address is checked once more after connecting, as a backstop.
 */
export function guardedConnector(policy: AddressPolicy, resolve: Resolver): buildConnector.connector {
  const connect = buildConnector({})
  return (options, callback) => {
    const host = options.hostname
    const literal = ipLiteral(host)
    const addresses = literal !== undefined ? Promise.resolve([literal]) : resolve(host)
    addresses.then(
      (found) => {
        const [first] = found
        if (first === undefined) {
          callback(new UnresolvableHostError(host), null)
          return
        }
        const allowed = found.find((address) => policy(address))
        if (allowed === undefined) {
          callback(new ForbiddenAddressError(host, first), null)
          return
        }
        connect(
          {
            ...options,
            hostname: allowed,
            // SNI and certificate checks use the name asked for (an IP literal has no name to send).
            servername: options.protocol === 'https:' && literal === undefined ? host : undefined,
          },
          (error, socket) => {
            if (error) {
              callback(error, null)
              return
            }
            const remote = socket.remoteAddress
            if (remote === undefined || !policy(remote)) {
              socket.destroy()
              callback(new ForbiddenAddressError(host, remote ?? 'unknown'), null)
              return
            }
            callback(null, socket)
          },
        )
      },
      () => callback(new UnresolvableHostError(host), null),
    )
  }
}

/** The first error of `type` along an error's chain of causes (undici wraps what the connector raised). */
export function findCause<T>(error: unknown, type: abstract new (...args: never[]) => T): T | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof type) return e
  return undefined
}

function errorCode(error: unknown): string | undefined {
  for (let e = error; e instanceof Error; e = e.cause) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string') return code
  }
  return undefined
}

/** For the log only: which of "resolves to a forbidden address" and "does not resolve" it was, or undefined. */
export function refusedHostDetail(error: unknown): string | undefined {
  return (findCause(error, ForbiddenAddressError) ?? findCause(error, UnresolvableHostError))?.message
}

/**
 * Why a request through the guarded connector got no answer, in words fit for the caller who chose the URL
 * (image probes, webhook attempts); undefined when the error is none of the known kinds.
 */
export function describeConnectionError(error: unknown): string | undefined {
  // One sentence for both: telling "resolves to a private address" apart from "does not resolve" would let a
  // caller map which internal names exist. refusedHostDetail says which, for the service's own log.
  const refused = findCause(error, ForbiddenAddressError) ?? findCause(error, UnresolvableHostError)
  if (refused) return `${refused.host} does not resolve to a public address`
  switch (errorCode(error)) {
    case 'ECONNREFUSED':
      return 'the server refused the connection'
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the server closed the connection'
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'the server could not be reached'
    case 'UND_ERR_INVALID_ARG':
      return 'the server sent an invalid response'
    default:
      return undefined
  }
}
