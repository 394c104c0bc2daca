import { z } from 'zod'
import type { Application, ApplicationKind } from '../db/schema.js'

/*
 * An application's token policy (docs/applications.md "Token policy",
 * docs/decisions/022-bound-and-expiring-tokens.md): whether a token request must carry a DPoP
 * proof (RFC 9449 §5; `dpop_bound_access_tokens`, §5.2), and whether access tokens expire and
 * are renewed by rotating refresh tokens (RFC 6749 §6, RFC 9700 §4.14.2) or stay valid until
 * revoked, the seed's default. Lifetimes are chosen from presets, not typed: each preset lies
 * inside migration 0022's check (access 60..604800 s, refresh 3600..31536000 s, refresh longer
 * than access), so no choice the form offers can be refused by the database.
 */

const HOUR = 3600
const DAY = 24 * HOUR

/** The access-token lifetimes an owner may choose, shortest first. */
export const ACCESS_LIFETIMES = Object.freeze({ '1h': HOUR, '8h': 8 * HOUR, '24h': DAY })
/** The refresh-token lifetimes an owner may choose, shortest first; each longer than every access lifetime. */
export const REFRESH_LIFETIMES = Object.freeze({ '30d': 30 * DAY, '90d': 90 * DAY, '180d': 180 * DAY })

export type AccessLifetime = keyof typeof ACCESS_LIFETIMES
export type RefreshLifetime = keyof typeof REFRESH_LIFETIMES

const ACCESS_KEYS = Object.keys(ACCESS_LIFETIMES) as [AccessLifetime, ...AccessLifetime[]]
const REFRESH_KEYS = Object.keys(REFRESH_LIFETIMES) as [RefreshLifetime, ...RefreshLifetime[]]

/** What the columns hold: both lifetimes null (valid until revoked) or both set. */
export interface TokenPolicy {
  requireDpop: boolean
  accessTokenTtlSeconds: number | null
  refreshTokenTtlSeconds: number | null
}

export function tokenPolicyOf(
  app: Pick<Application, 'require_dpop' | 'access_token_ttl_seconds' | 'refresh_token_ttl_seconds'>,
): TokenPolicy {
  return {
    requireDpop: app.require_dpop,
    accessTokenTtlSeconds: app.access_token_ttl_seconds,
    refreshTokenTtlSeconds: app.refresh_token_ttl_seconds,
  }
}

export function samePolicy(a: TokenPolicy, b: TokenPolicy): boolean {
  return (
    a.requireDpop === b.requireDpop &&
    a.accessTokenTtlSeconds === b.accessTokenTtlSeconds &&
    a.refreshTokenTtlSeconds === b.refreshTokenTtlSeconds
  )
}

/** "1 hour", "8 hours", "30 days": a lifetime as people say it (an operator's SQL may have stored any). */
export function formatLifetime(seconds: number): string {
  const [n, unit] =
    seconds % DAY === 0
      ? [seconds / DAY, 'day']
      : seconds % HOUR === 0
        ? [seconds / HOUR, 'hour']
        : seconds % 60 === 0
          ? [seconds / 60, 'minute']
          : [seconds, 'second']
  return `${n} ${unit}${n === 1 ? '' : 's'}`
}

/** The form's fields as a browser sends them; an absent select reads as its first option. */
const tokenPolicyFormSchema = z.object({
  dpop: z.enum(['optional', 'required'], { message: 'Choose whether DPoP is optional or required.' }),
  lifetime: z.enum(['until-revoked', 'expiring'], { message: 'Choose tokens valid until revoked or expiring tokens.' }),
  access_lifetime: z.enum(ACCESS_KEYS, { message: 'Choose an access-token lifetime from the list.' }).default(ACCESS_KEYS[0]),
  refresh_lifetime: z.enum(REFRESH_KEYS, { message: 'Choose a refresh-token lifetime from the list.' }).default(REFRESH_KEYS[0]),
})

export type TokenPolicyChoice =
  { ok: true; policy: TokenPolicy; values: TokenPolicyFormValues } | { ok: false; error: string; values: TokenPolicyFormValues }

/** The form as shown: the radio buttons' and selects' values. */
export interface TokenPolicyFormValues {
  dpop: string
  lifetime: string
  accessLifetime: string
  refreshLifetime: string
}

function presetKey<K extends string>(presets: Readonly<Record<K, number>>, seconds: number | null): K {
  const keys = Object.keys(presets) as K[]
  return keys.find((k) => presets[k] === seconds) ?? keys[0]!
}

/** The form prefilled with the application's policy (a lifetime that is no preset shows the first preset). */
export function tokenPolicyFormValues(policy: TokenPolicy): TokenPolicyFormValues {
  return {
    dpop: policy.requireDpop ? 'required' : 'optional',
    lifetime: policy.accessTokenTtlSeconds === null ? 'until-revoked' : 'expiring',
    accessLifetime: presetKey(ACCESS_LIFETIMES, policy.accessTokenTtlSeconds),
    refreshLifetime: presetKey(REFRESH_LIFETIMES, policy.refreshTokenTtlSeconds),
  }
}

/**
 * Parses the "Token policy" form. A machine gets no refresh token whatever is stored (RFC 6749
 * §4.4.3), so its form has no refresh select and the first preset is stored, as migration 0022's
 * check wants both lifetimes or neither; it applies only if the kind changes.
 */
export function parseTokenPolicyChoice(body: unknown, kind: ApplicationKind): TokenPolicyChoice {
  const raw = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>
  const text = (v: unknown) => (typeof v === 'string' ? v : undefined)
  const input = {
    dpop: text(raw.dpop),
    lifetime: text(raw.lifetime),
    access_lifetime: text(raw.access_lifetime),
    refresh_lifetime: kind === 'machine' ? undefined : text(raw.refresh_lifetime),
  }
  const values: TokenPolicyFormValues = {
    dpop: input.dpop ?? '',
    lifetime: input.lifetime ?? '',
    accessLifetime: input.access_lifetime ?? ACCESS_KEYS[0],
    refreshLifetime: input.refresh_lifetime ?? REFRESH_KEYS[0],
  }
  const result = tokenPolicyFormSchema.safeParse(input)
  if (!result.success) return { ok: false, error: result.error.issues[0]!.message, values }
  const d = result.data
  const expiring = d.lifetime === 'expiring'
  return {
    ok: true,
    values,
    policy: {
      requireDpop: d.dpop === 'required',
      accessTokenTtlSeconds: expiring ? ACCESS_LIFETIMES[d.access_lifetime] : null,
      refreshTokenTtlSeconds: expiring ? REFRESH_LIFETIMES[d.refresh_lifetime] : null,
    },
  }
}

/** The policy in words, for the owner's page, the operator's page and the command line. */
export interface TokenPolicyWords {
  dpop: string
  accessTokens: string
  refreshTokens: string
  /** One line: "DPoP optional, tokens valid until revoked", "DPoP required, access tokens 1 hour, refresh tokens 30 days". */
  brief: string
}

export function describeTokenPolicy(policy: TokenPolicy, kind: ApplicationKind): TokenPolicyWords {
  const dpop = policy.requireDpop
    ? 'Required: a token request without a valid DPoP proof is refused'
    : 'Optional: a client that sends a DPoP proof gets a bound token, one that does not gets a bearer token'
  const access = policy.accessTokenTtlSeconds
  const refresh = policy.refreshTokenTtlSeconds
  const accessTokens = access === null ? 'Valid until revoked' : `Expire after ${formatLifetime(access)}`
  const refreshTokens =
    kind === 'machine'
      ? 'None: a machine asks for a new token with its secret (RFC 6749 §4.4.3)'
      : access === null || refresh === null
        ? 'None: access tokens do not expire'
        : `Rotate at each use; unused, one expires after ${formatLifetime(refresh)}`
  const lifetimes =
    access === null
      ? 'tokens valid until revoked'
      : kind === 'machine' || refresh === null
        ? `access tokens ${formatLifetime(access)}`
        : `access tokens ${formatLifetime(access)}, refresh tokens ${formatLifetime(refresh)}`
  return { dpop, accessTokens, refreshTokens, brief: `DPoP ${policy.requireDpop ? 'required' : 'optional'}, ${lifetimes}` }
}
