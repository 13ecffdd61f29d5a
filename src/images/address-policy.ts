import ipaddr from 'ipaddr.js'

/** Decides whether the service may connect to an IP address to fetch an image. */
export type AddressPolicy = (address: string) => boolean

/**
 * Public unicast only (docs/api.md#images). Everything ipaddr.js puts in a special range is refused: loopback,
 * unspecified, private, link-local (169.254.169.254 is the cloud metadata service), CGNAT, unique-local,
 * multicast, broadcast, reserved, and the IPv6 ranges that embed or tunnel to an IPv4 address (NAT64, 6to4,
 * Teredo), whose IPv4 part could be any of those. IPv4-mapped addresses are judged by their IPv4 part.
 */
export const publicAddressesOnly: AddressPolicy = (address) => {
  if (!ipaddr.isValid(address)) return false
  const parsed = ipaddr.process(address) // ::ffff:a.b.c.d → a.b.c.d
  if (parsed.kind() === 'ipv6') {
    // IPv4-compatible addresses (::a.b.c.d, deprecated) written in hex, e.g. ::7f00:1 for 127.0.0.1,
    // come out of ipaddr.js as ordinary unicast: refuse the whole of ::/96.
    const parts = (parsed as ipaddr.IPv6).parts
    if (parts.slice(0, 6).every((part) => part === 0)) return false
  }
  return parsed.range() === 'unicast'
}

/** IMAGE_ALLOW_PRIVATE_NETWORKS=true: development and tests only. */
export const anyAddress: AddressPolicy = (address) => ipaddr.isValid(address)

/**
 * The IP address a URL's host names literally, or undefined for a DNS name. The WHATWG URL parser has
 * already turned every IPv4 spelling (2130706433, 0x7f000001, 0177.0.0.1, 127.1) into dotted decimal;
 * IPv6 hosts keep their brackets.
 */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : undefined
}
