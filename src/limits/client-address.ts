import { isIPv4, isIPv6 } from 'node:net'

/**
 * The key every per-address limit counts under. An IPv4 address is itself; an IPv6 address is
 * its /64, because one host (or one home) is given a whole /64 and picks any address in it
 * (RFC 4291 2.5.1 interface identifiers, RFC 8981 temporary addresses), so keying the full
 * address would give an attacker 2^64 fresh counters. An IPv4-mapped IPv6 address
 * (`::ffff:1.2.3.4`, RFC 4291 2.5.5.2), as a dual-stack socket reports IPv4 peers, is the IPv4
 * address it maps. Anything else (not an address at all) is returned as given.
 */
export function clientAddressKey(address: string): string {
  const bare = address.split('%')[0] ?? address
  if (isIPv4(bare)) return bare
  if (!isIPv6(bare)) return address
  const groups = ipv6Groups(bare.toLowerCase())
  const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff
  if (mapped) {
    const [hi = 0, lo = 0] = groups.slice(6)
    return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.')
  }
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`
}

/**
 * The client's address as the audit log records it: the whole address (an operator looking into
 * an event wants the host, not its /64), with an IPv4-mapped IPv6 address written as the IPv4
 * address it maps and a zone id dropped, IPv6 in its compressed lower-case form. `address` is the
 * request's address as Fastify works it out under TRUST_PROXY (src/app.ts). Anything that is not
 * an IP address (a Unix socket, an empty value) is null: the log stores nothing it cannot vouch for.
 */
export function clientAddressForAudit(address: string | undefined): string | null {
  if (address === undefined) return null
  const bare = address.split('%')[0] ?? address
  if (isIPv4(bare)) return bare
  if (!isIPv6(bare)) return null
  const groups = ipv6Groups(bare.toLowerCase())
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) return clientAddressKey(bare)
  // The URL parser writes an IPv6 host in the canonical form of RFC 5952.
  return new URL(`http://[${bare}]/`).hostname.slice(1, -1)
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail converted). */
function ipv6Groups(address: string): number[] {
  let text = address
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)))
  const left = parse(head)
  const right = tail === undefined ? [] : parse(tail)
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right]
}
