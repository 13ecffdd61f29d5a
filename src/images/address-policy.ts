import ipaddr from 'ipaddr.js'

/** Whether the service may connect to an IP address. */
export type AddressPolicy = (address: string) => boolean

/**
 * Public unicast only: every special range ipaddr.js knows is refused, link-local (cloud metadata) and the IPv6
 * ranges that embed an IPv4 address (NAT64, 6to4, Teredo) among them. IPv4-mapped ones are judged as IPv4.
 */
export const publicAddressesOnly: AddressPolicy = (address) => {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.process(address)
  // IPv4-compatible addresses written in hex (::7f00:1 is 127.0.0.1) come out as ordinary unicast: refuse ::/96.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((part) => part === 0)) return false
  return parsed.range() === 'unicast'
}

/** IMAGE_ALLOW_PRIVATE_NETWORKS=true: development and tests only. */
export const anyAddress: AddressPolicy = (address) => ipaddr.isValid(address)

/** The IP address a URL's host names literally, or undefined for a DNS name. The URL parser has already normalised IPv4 spellings. */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : undefined
}
