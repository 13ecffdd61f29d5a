import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ipLiteral, publicAddressesOnly } from '../src/images/address-policy.js'

/**
 * docs/api.md#images: which hosts an image URL may name. Each row is a URL as a caller could send it; the host goes
 * through the same WHATWG URL parsing the prober uses, so every spelling is judged as it would be connected.
 */
const refused: Array<[url: string, why: string]> = [
  ['http://127.0.0.1/a.png', 'loopback'],
  ['http://127.255.255.254/a.png', 'loopback, end of 127/8'],
  ['http://2130706433/a.png', 'loopback as one decimal number'],
  ['http://0x7f000001/a.png', 'loopback in hex'],
  ['http://0x7f.0.0.1/a.png', 'loopback with a hex first part'],
  ['http://0177.0.0.1/a.png', 'loopback in octal'],
  ['http://127.1/a.png', 'loopback, short form'],
  ['http://127.0.0.1./a.png', 'loopback with a trailing dot'],
  ['http://[::1]/a.png', 'IPv6 loopback'],
  ['http://[0:0:0:0:0:0:0:1]/a.png', 'IPv6 loopback, long form'],
  ['http://[::ffff:127.0.0.1]/a.png', 'IPv4-mapped loopback'],
  ['http://[::ffff:7f00:1]/a.png', 'IPv4-mapped loopback in hex'],
  ['http://[::127.0.0.1]/a.png', 'IPv4-compatible loopback'],
  ['http://[::7f00:1]/a.png', 'IPv4-compatible loopback in hex'],
  ['http://[::8.8.8.8]/a.png', 'IPv4-compatible anything (deprecated ::/96)'],
  ['http://0.0.0.0/a.png', 'unspecified'],
  ['http://0/a.png', 'unspecified, short form'],
  ['http://0.1.2.3/a.png', '0.0.0.0/8'],
  ['http://[::]/a.png', 'IPv6 unspecified'],
  ['http://10.0.0.1/a.png', 'RFC 1918 10/8'],
  ['http://10.255.255.255/a.png', 'RFC 1918 10/8, last'],
  ['http://172.16.0.1/a.png', 'RFC 1918 172.16/12'],
  ['http://172.31.255.255/a.png', 'RFC 1918 172.16/12, last'],
  ['http://192.168.1.1/a.png', 'RFC 1918 192.168/16'],
  ['http://[::ffff:10.0.0.1]/a.png', 'IPv4-mapped private'],
  ['http://169.254.169.254/latest/meta-data/', 'link-local: the cloud metadata service'],
  ['http://[::ffff:169.254.169.254]/a.png', 'IPv4-mapped metadata service'],
  ['http://[fe80::1]/a.png', 'IPv6 link-local'],
  ['http://100.64.0.1/a.png', 'CGNAT 100.64/10'],
  ['http://100.127.255.255/a.png', 'CGNAT, last'],
  ['http://[fc00::1]/a.png', 'unique-local fc00::/7'],
  ['http://[fd12:3456::1]/a.png', 'unique-local fd00::/8'],
  ['http://224.0.0.1/a.png', 'IPv4 multicast'],
  ['http://239.255.255.250/a.png', 'IPv4 multicast (SSDP)'],
  ['http://[ff02::1]/a.png', 'IPv6 multicast'],
  ['http://255.255.255.255/a.png', 'broadcast'],
  ['http://240.0.0.1/a.png', 'reserved 240/4'],
  ['http://192.0.2.1/a.png', 'reserved TEST-NET-1'],
  ['http://198.18.0.1/a.png', 'reserved benchmarking'],
  ['http://[2001:db8::1]/a.png', 'IPv6 documentation'],
  ['http://[64:ff9b::7f00:1]/a.png', 'NAT64 of loopback'],
  ['http://[2002:7f00:1::]/a.png', '6to4 of loopback'],
  ['http://[2001::1]/a.png', 'Teredo'],
  ['http://[100::1]/a.png', 'IPv6 discard'],
]

const allowed: Array<[url: string, why: string]> = [
  ['http://8.8.8.8/a.png', 'public IPv4'],
  ['https://1.1.1.1/a.png', 'public IPv4 over https'],
  ['http://172.32.0.1/a.png', 'just past 172.16/12'],
  ['http://100.128.0.1/a.png', 'just past CGNAT'],
  ['http://100.63.255.255/a.png', 'just before CGNAT'],
  ['http://11.0.0.1/a.png', 'just past 10/8'],
  ['http://[2606:4700:4700::1111]/a.png', 'public IPv6'],
  ['http://[::ffff:8.8.8.8]/a.png', 'IPv4-mapped public address'],
]

describe('image address policy: the classifier table', () => {
  for (const [url, why] of refused) {
    test(`refuses ${url} (${why})`, () => {
      const literal = ipLiteral(new URL(url).hostname)
      assert.ok(literal !== undefined, `${url} is an IP literal`)
      assert.equal(publicAddressesOnly(literal), false)
    })
  }
  for (const [url, why] of allowed) {
    test(`allows ${url} (${why})`, () => {
      const literal = ipLiteral(new URL(url).hostname)
      assert.ok(literal !== undefined, `${url} is an IP literal`)
      assert.equal(publicAddressesOnly(literal), true)
    })
  }

  test('host names are not IP literals: they are resolved, then judged', () => {
    for (const host of ['localhost', 'images.example.com', '127.0.0.1.nip.io', 'xn--ls8h.la']) {
      assert.equal(ipLiteral(new URL(`http://${host}/a.png`).hostname), undefined, host)
    }
  })

  test('anything that is not an address is refused', () => {
    for (const value of ['', 'localhost', 'not an ip', '999.1.1.1', '::g']) assert.equal(publicAddressesOnly(value), false, value)
  })
})
