import { BlockList, isIP } from 'node:net'

/*
 * Which network addresses Gatehouse may connect to when it fetches a client's metadata document
 * (docs/decisions/026-client-metadata-documents.md "Fetch safety"). The client_id is a URL any
 * stranger chooses, so without these rules it would make Gatehouse a proxy into the operator's
 * own network (SSRF: draft-ietf-oauth-client-id-metadata-document "Security Considerations",
 * "Server-Side Request Forgery"). Ranges from the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries (RFC 6890).
 */

/*
 * One list per family, each checked only with addresses of its own family: node:net's BlockList
 * relates IPv4 addresses and IPv4-mapped IPv6 ranges to each other, which would let the
 * `::ffff:0:0/96` rule below catch every IPv4 address.
 */
function blockList(family: 'ipv4' | 'ipv6', subnets: ReadonlyArray<readonly [string, number]>): BlockList {
  const list = new BlockList()
  for (const [net, prefix] of subnets) list.addSubnet(net, prefix, family)
  return list
}

/** Never reachable, whatever the operator allows: link-local (cloud metadata at 169.254.169.254), multicast, unspecified, reserved, documentation, relays and translations. */
const NEVER_V4 = blockList('ipv4', [
  ['0.0.0.0', 8],
  ['169.254.0.0', 16],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  // The 6to4 relay anycast (RFC 7526): it forwards into IPv6 networks chosen by the packet.
  ['192.88.99.0', 24],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
])
const NEVER_V6 = blockList('ipv6', [
  // Unspecified, and the deprecated IPv4-compatible form (::a.b.c.d); ::1 is loopback, below.
  ['::', 96],
  // IPv4-mapped (::ffff:a.b.c.d): refused whole, so no mapped spelling of a private IPv4 address gets through.
  ['::ffff:0:0', 96],
  // IPv4/IPv6 translation (RFC 6052, RFC 8215) and 6to4 (RFC 3056): they embed an IPv4 address.
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2002::', 16],
  // IPv4-translated (SIIT, RFC 6145 / RFC 7915: ::ffff:0:a.b.c.d) and Teredo (RFC 4380), which embed one too.
  ['::ffff:0:0:0', 96],
  ['2001::', 32],
  // Documentation (RFC 9637) and SRv6 segment identifiers (RFC 9602): never a web server's address.
  ['3fff::', 20],
  ['5f00::', 16],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
])

/** Loopback and private networks: reachable only with CLIENT_ID_METADATA_ALLOW_PRIVATE_ADDRESSES (development). */
const PRIVATE_V4 = blockList('ipv4', [
  ['127.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
])
const PRIVATE_V6 = blockList('ipv6', [
  ['::1', 128],
  ['fc00::', 7],
])

export type AddressClass = 'public' | 'private' | 'forbidden'

/**
 * What an IP address literal is: `forbidden` (never connected to), `private` (loopback, private,
 * unique-local: only in development) or `public`. Anything that is not an IP address is forbidden.
 */
export function classifyAddress(address: string): AddressClass {
  const family = isIP(address)
  if (family === 0) return 'forbidden'
  if (family === 4) {
    if (NEVER_V4.check(address, 'ipv4')) return 'forbidden'
    return PRIVATE_V4.check(address, 'ipv4') ? 'private' : 'public'
  }
  // Loopback first: it lies inside the IPv4-compatible ::/96, which is otherwise refused.
  if (PRIVATE_V6.check(address, 'ipv6')) return 'private'
  return NEVER_V6.check(address, 'ipv6') ? 'forbidden' : 'public'
}

/** Whether Gatehouse may connect to `address` under the operator's setting. */
export function addressAllowed(address: string, allowPrivate: boolean): boolean {
  const c = classifyAddress(address)
  return c === 'public' || (c === 'private' && allowPrivate)
}

/** Whether `host` (a URL's hostname, IPv6 without brackets) is a loopback name or address: where http is allowed in development. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true
  const family = isIP(host)
  if (family === 4) return host.startsWith('127.')
  return family === 6 && host === '::1'
}
