import { BlockList, isIP } from 'node:net'
import { z } from 'zod'

/*
 * The parsers of single settings that src/config.ts composes into its schema: numbers with their
 * bounds, booleans, PostgreSQL URLs and TRUST_PROXY. Only src/config.ts imports them.
 */

export const bool = z.enum(['true', 'false', '1', '0'], { message: 'must be true or false' }).transform((v) => v === 'true' || v === '1')

export const port = z.coerce
  .number({ message: 'must be a number' })
  .int('must be a whole number')
  .min(0, 'must be between 0 and 65535')
  .max(65535, 'must be between 0 and 65535')

export const positiveInt = (max?: number) => {
  let s = z.coerce.number({ message: 'must be a number' }).int('must be a whole number').positive('must be positive')
  if (max !== undefined) s = s.max(max, `must be at most ${max}`)
  return s
}

export const nonNegativeInt = (max: number) =>
  z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(0, 'must not be negative')
    .max(max, `must be at most ${max}`)

/**
 * TRUST_PROXY: the reverse proxies whose X-Forwarded-For Gatehouse believes, as a comma-separated
 * list of addresses or CIDRs (IPv4 or IPv6; proxy-addr's named ranges loopback, linklocal and
 * uniquelocal too), or as a hop count. Never "every hop": Fastify then takes the left-most
 * X-Forwarded-For entry, which the client writes itself, and every per-address limit would be
 * keyed by a value of the attacker's choosing (docs: fastify.dev "Server" trustProxy; OWASP
 * Credential Stuffing Prevention Cheat Sheet). `false` or `0`: no proxy, the peer is the client.
 */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal'])
function isProxyEntry(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true
  const [address = '', prefix, ...rest] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || rest.length > 0) return false
  if (prefix === undefined) return true
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)
}
/**
 * A range that holds every IPv4 address (0.0.0.0/0, or an IPv6 range holding all of
 * ::ffff:0:0/96, which proxy-addr matches IPv4 peers against) or every IPv6 address (::/0):
 * trusting it is trusting every hop, whatever it is called.
 */
function coversEveryAddress(entry: string): boolean {
  const [address = '', prefix] = entry.split('/')
  if (prefix === undefined || NAMED_RANGES.has(entry)) return false
  const family = isIP(address) === 4 ? 'ipv4' : 'ipv6'
  if (Number(prefix) === 0) return true
  const range = new BlockList()
  range.addSubnet(address, Number(prefix), family)
  return range.check('0.0.0.0', 'ipv4') && range.check('255.255.255.255', 'ipv4')
}
const EVERY_HOP =
  'would trust every hop, so any client could choose its own address in X-Forwarded-For and escape the per-address limits; list your proxies (addresses or CIDRs, comma-separated) or give their number of hops'
export const trustProxy = z
  .string()
  .trim()
  .superRefine((v, ctx) => {
    // Any case: TRUE or True is the same mistake and deserves the same explanation.
    if (v.toLowerCase() === 'true') {
      ctx.addIssue({ code: 'custom', message: `true ${EVERY_HOP}` })
    } else if (v !== 'false' && !/^\d{1,3}$/.test(v) && !v.split(',').every((e) => isProxyEntry(e.trim()))) {
      ctx.addIssue({ code: 'custom', message: 'must be false, a number of hops, or a comma-separated list of proxy addresses or CIDRs' })
    } else {
      const everything = v.split(',').find((e) => coversEveryAddress(e.trim()))
      if (everything !== undefined) ctx.addIssue({ code: 'custom', message: `${everything.trim()} covers every address: it ${EVERY_HOP}` })
    }
  })
  .transform((v): TrustProxy => {
    if (v === 'false' || v === '0') return false
    if (/^\d+$/.test(v)) return Number(v)
    return Object.freeze(v.split(',').map((e) => e.trim()))
  })

/** No proxy, the number of proxy hops in front of Gatehouse, or the proxies' addresses and CIDRs. */
export type TrustProxy = false | number | readonly string[]

export const postgresUrl = z
  .string()
  .refine((v) => /^postgres(ql)?:\/\//.test(v) && URL.canParse(v), 'must be a postgres:// or postgresql:// URL')

/**
 * A comma-separated list of host names, each exact (`client.example`) or `*.suffix` for every name
 * under suffix (`*.example.com`: `a.example.com`, not `example.com`); IP addresses as written in a
 * URL's host, IPv6 without brackets. Lower-cased; empty entries ignored.
 */
const HOST_RULE = /^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/
export const hostList = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((e) => e.trim().toLowerCase())
      .filter((e) => e !== ''),
  )
  .refine((hosts) => hosts.every((h) => HOST_RULE.test(h) || isIP(h) !== 0), 'must be comma-separated host names, or *.suffix')
  .transform((hosts) => Object.freeze(hosts))
