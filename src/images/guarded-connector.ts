import { lookup as dnsLookup } from 'node:dns'
import { buildConnector } from 'undici'
import { ipLiteral, type AddressPolicy } from './address-policy.js'

/** How a host name becomes addresses; tests stand in for DNS with their own. */
export type Resolver = (hostname: string) => Promise<string[]>

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses.map((a) => a.address))))
  })

/** Raised instead of connecting to an address the policy refuses. */
class ForbiddenAddressError extends Error {
  readonly code = 'ERR_FORBIDDEN_ADDRESS'
  constructor(
    readonly host: string,
    readonly address: string,
  ) {
    super(`${host} resolves to ${address}, which is not a public address`)
  }
}

class UnresolvableHostError extends Error {
  readonly code = 'ERR_UNRESOLVABLE_HOST'
  constructor(readonly host: string) {
    super(`${host} could not be resolved`)
  }
}

/**
 * An undici connector that resolves the host itself and connects by IP to the first address the policy allows
 * (TLS still verifies the name): the address checked is the address connected to, so DNS rebinding has nothing
 * to exploit. The socket's remote address is checked again after connecting, as a backstop.
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
            // SNI and certificate checks use the name asked for; an IP literal has none.
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

/** The first error along an error's causes that `matches` (undici wraps what the connector raised). */
function findCause<T extends Error>(error: unknown, matches: (e: Error) => e is T): T | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (matches(e)) return e
  return undefined
}

const hasCode = (e: Error): e is Error & { code: string } => typeof (e as { code?: unknown }).code === 'string'

const refusal = (error: unknown) => findCause(error, (e) => e instanceof ForbiddenAddressError || e instanceof UnresolvableHostError)

/** For the service's log only: whether the host resolved to a forbidden address or not at all. */
export function refusedHostDetail(error: unknown): string | undefined {
  return refusal(error)?.message
}

/** Why a request through the guarded connector got no answer, in words fit for whoever chose the URL. */
export function describeConnectionError(error: unknown): string | undefined {
  // One sentence for both: telling them apart would let a caller map which internal names exist.
  const refused = refusal(error)
  if (refused) return `${refused.host} does not resolve to a public address`
  switch (findCause(error, hasCode)?.code) {
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
