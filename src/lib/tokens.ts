import { formatAccessToken } from '@gatehouse/verifier/shared'
import { randomToken, sha256 } from './crypto.js'

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

export function generateClientSecret(): string {
  return CLIENT_SECRET_PREFIX + randomToken(32)
}

export function generateAuthorizationCode(): string {
  return CODE_PREFIX + randomToken(32)
}

/** Public identifier: random but not secret, so no prefix tricks and no hashing. */
export function generateClientId(): string {
  return randomToken(18)
}

/** The digest under which a token, code or secret is stored and looked up. */
export const digest = sha256
