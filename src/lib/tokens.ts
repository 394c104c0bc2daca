import { formatAccessToken, formatRefreshToken } from '@gatehouse/verifier/shared'
import { randomToken } from './crypto.js'

/*
 * Formats of the secrets Gatehouse issues (docs/decisions/002-token-format.md). Prefixes let
 * secret scanners recognise leaks. The access token's format is shared with every verifier,
 * so it is defined in @gatehouse/verifier.
 */
export const CLIENT_SECRET_PREFIX = 'gcs_'
export const CODE_PREFIX = 'gac_'

export function generateAccessToken(): string {
  return formatAccessToken(randomToken(32))
}

/** A refresh token (RFC 6749 §6): the access token's format under `grt_` (docs/expiring-tokens.md). */
export function generateRefreshToken(): string {
  return formatRefreshToken(randomToken(32))
}

export function generateClientSecret(): string {
  return CLIENT_SECRET_PREFIX + randomToken(32)
}

export function generateAuthorizationCode(): string {
  return CODE_PREFIX + randomToken(32)
}

/**
 * The secret of a mailed single-use link (email verification, password reset, email change and its cancellation),
 * prefixed by its purpose so that a leaked one is recognisable. Stored as its digest.
 */
export const EMAIL_LINK_PREFIXES = {
  'verify-email': 'gev_',
  'reset-password': 'gpr_',
  'change-email': 'gce_',
  'cancel-email-change': 'gcc_',
} as const

export function generateEmailLinkToken(purpose: keyof typeof EMAIL_LINK_PREFIXES): string {
  return EMAIL_LINK_PREFIXES[purpose] + randomToken(32)
}

/** Whether `value` has the shape of a link token of this purpose (checked before any lookup). */
export function isEmailLinkToken(purpose: keyof typeof EMAIL_LINK_PREFIXES, value: unknown): value is string {
  return (
    typeof value === 'string' && value.length === 47 && value.startsWith(EMAIL_LINK_PREFIXES[purpose]) && /^[A-Za-z0-9_-]+$/.test(value)
  )
}

/**
 * Public identifier: random but not secret, so no prefix tricks and no hashing. Never begins
 * with "-": operators type client_ids into command lines (`gatehouse apps show <client_id>`),
 * where one in 64 would otherwise read as an option.
 */
export function generateClientId(): string {
  for (;;) {
    const id = randomToken(18)
    if (!id.startsWith('-')) return id
  }
}

/**
 * The longest client_id that is looked up. Issued ones have 24 characters; the bound leaves
 * room while keeping an attacker's megabyte-long client_id away from the database.
 */
const MAX_CLIENT_ID_LENGTH = 256

/** Whether a client_id sent by a client is short enough to be looked up at all. */
export function isClientIdWithinBound(clientId: string): boolean {
  return clientId.length <= MAX_CLIENT_ID_LENGTH
}
