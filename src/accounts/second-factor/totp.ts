import { Secret, TOTP } from 'otpauth'

/*
 * RFC 6238 time-based one-time passwords, computed by `otpauth` (maintained, no dependencies,
 * follows RFC 4226/6238 and the Key Uri Format authenticator apps read). The parameters are the
 * ones every authenticator app supports (docs/decisions/011-second-factor.md): HMAC-SHA-1, 6
 * digits, 30-second steps; a 160-bit secret (RFC 4226 4 recommends 160 bits).
 */

const PERIOD_SECONDS = 30
const DIGITS = 6
const SECRET_BYTES = 20
/**
 * Steps either side of now that are accepted (RFC 6238 5.2 recommends at most one step of
 * network delay): a code typed in the last seconds of its step, or a phone's clock a little off.
 */
const WINDOW = 1

/** A new secret, base32 (RFC 4648) as apps and people type it. */
export function newTotpSecret(): string {
  return new Secret({ size: SECRET_BYTES }).base32
}

function totpOf(secretBase32: string, label = '', issuer = ''): TOTP {
  return new TOTP({ issuer, label, algorithm: 'SHA1', digits: DIGITS, period: PERIOD_SECONDS, secret: Secret.fromBase32(secretBase32) })
}

/** The otpauth:// URI the QR code holds: the service as issuer, the account's address as label. */
export function totpUri(secretBase32: string, issuer: string, accountName: string): string {
  return totpOf(secretBase32, accountName, issuer).toString()
}

/** The secret in groups of four, as a person types it into an app. */
export function groupedSecret(secretBase32: string): string {
  return secretBase32.replace(/(.{4})(?=.)/g, '$1 ')
}

/** Whether `code` looks like a TOTP code once spaces are dropped (six digits). */
export function isTotpCode(code: string): boolean {
  return /^\d{6}$/.test(code)
}

/**
 * The time step (RFC 6238 4.2, T) whose code `code` is, within WINDOW steps of `now`; undefined
 * when it matches none. The caller refuses a step it accepted before (replay).
 */
export function totpStep(secretBase32: string, code: string, now: Date): number | undefined {
  if (!isTotpCode(code)) return undefined
  const totp = totpOf(secretBase32)
  const delta = totp.validate({ token: code, timestamp: now.getTime(), window: WINDOW })
  return delta === null ? undefined : totp.counter({ timestamp: now.getTime() }) + delta
}
