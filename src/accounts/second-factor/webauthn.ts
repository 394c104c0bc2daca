import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import { z } from 'zod'
import type { Db } from '../../db/connect.js'
import { randomToken, sha256Hex } from '../../lib/crypto.js'
import { hasControlCharacter } from '../../lib/text.js'
import { LIFETIMES, RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { takeSlots } from '../../limits/rate-limiter.js'
import { insertWebauthnChallenge, takeWebauthnChallenge } from '../../repositories/passkeys.js'
import type { AccountContext } from '../context.js'

/*
 * What registration and sign-in with passkeys share (docs/decisions/011-second-factor.md): the
 * relying party, the challenges, and the shape of what the browser sends back.
 */

/**
 * The relying party is PUBLIC_URL: its host is the RP ID and its origin the only origin an
 * assertion may come from (WebAuthn Level 3, 5.1.4.1 and 7.2 step 9). A credential is bound to
 * the RP ID, so changing PUBLIC_URL's host makes every passkey unusable (docs/accounts.md "Passkeys").
 */
export interface RelyingParty {
  readonly id: string
  readonly origin: string
  readonly name: string
}

export function relyingPartyOf(ctx: Pick<AccountContext, 'publicUrl' | 'serviceName'>): RelyingParty {
  const url = new URL(ctx.publicUrl)
  return { id: url.hostname, origin: url.origin, name: ctx.serviceName }
}

/**
 * @simplewebauthn/server, loaded by the first passkey ceremony and not at start: it is the
 * costliest import of the whole service graph, and most processes (a CLI
 * command, a test file, a server whose users have no passkeys yet) never need it.
 */
export function simpleWebAuthn() {
  return import('@simplewebauthn/server')
}

/** The browser's timeout we ask for: the challenge's own lifetime. */
export const WEBAUTHN_TIMEOUT_MS = LIFETIMES.webauthnChallengeMs

/**
 * The WebAuthn user handle of an account: its id's bytes. Opaque (never the email: it is stored
 * on the authenticator and returned to anyone who asks it), and the same for every passkey of the
 * account, as the specification asks (5.4.3).
 */
export function userHandleOf(userId: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(userId, 'utf8'))
}

export function userHandleBase64Url(userId: string): string {
  return Buffer.from(userId, 'utf8').toString('base64url')
}

/**
 * Stores a challenge under the digest of a new random id, and returns that id: the edge keeps it
 * in a cookie (or the second-factor step in its pending log-in) and hands it back to verify.
 * The database holds the digest only, so reading it does not let anyone finish the ceremony.
 */
export async function issueChallenge(
  db: Db,
  now: Date,
  challenge: { purpose: 'register' | 'authenticate'; userId: string | null; value: string },
): Promise<string> {
  const id = randomToken()
  await insertWebauthnChallenge(db, {
    id_hash: sha256Hex(id),
    user_id: challenge.userId,
    purpose: challenge.purpose,
    challenge: challenge.value,
    expires_at: new Date(now.getTime() + LIFETIMES.webauthnChallengeMs),
  })
  return id
}

/** A challenge was not issued: too many for the account or the client address in the window. */
export interface ChallengesRefused {
  readonly kind: 'refused'
  readonly retryAfterSeconds: number
}

/**
 * Takes a slot for one more challenge of `userId` (a passkey's registration, or the second step
 * of its pending log-in) from `address`, under RATE_LIMITS.webauthnChallengeAddress and
 * webauthnChallengeAccount; kept whatever follows, since each stores a row. With the janitor
 * deleting expired ones (RETENTION.webauthn_challenges), this bounds the table by traffic
 * allowed, not traffic sent. Undefined when allowed.
 */
export async function takeChallengeSlot(
  ctx: AccountContext,
  who: { readonly userId: string; readonly address: string },
): Promise<ChallengesRefused | undefined> {
  const slots = await takeSlots(ctx.db, ctx.clock, [
    rateRule(RATE_LIMITS.webauthnChallengeAddress, who.address, ctx.limits),
    rateRule(RATE_LIMITS.webauthnChallengeAccount, who.userId, ctx.limits),
  ])
  return slots.allowed ? undefined : { kind: 'refused', retryAfterSeconds: slots.retryAfterSeconds }
}

/**
 * The challenge issued under `id` for `purpose` and `userId` (null: no account yet, passwordless
 * sign-in), taken for good whatever happens next: a second attempt with the same challenge finds
 * nothing (replay). Undefined when it was never issued, was issued for something else, or expired.
 */
export async function takeChallenge(
  db: Db,
  now: Date,
  id: unknown,
  expected: { purpose: 'register' | 'authenticate'; userId: string | null },
): Promise<string | undefined> {
  if (typeof id !== 'string' || id.length === 0 || id.length > 100) return undefined
  const row = await takeWebauthnChallenge(db, sha256Hex(id))
  if (row === undefined || row.purpose !== expected.purpose || row.user_id !== expected.userId) return undefined
  return row.expires_at > now ? row.challenge : undefined
}

/* What the browser sends, checked before the library reads it: bounded strings, the right shape. */
const base64url = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^[A-Za-z0-9_-]*$/)
const CREDENTIAL_ID_MAX = 1366 // 1023 bytes (WebAuthn 5.1 credential id), base64url
const BLOB_MAX = 32_768
const credentialBase = {
  id: base64url(CREDENTIAL_ID_MAX).min(1),
  rawId: base64url(CREDENTIAL_ID_MAX).min(1),
  type: z.literal('public-key'),
  clientExtensionResults: z.looseObject({}),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
}

const registrationSchema = z.object({
  ...credentialBase,
  response: z.object({
    clientDataJSON: base64url(BLOB_MAX),
    attestationObject: base64url(BLOB_MAX),
    authenticatorData: base64url(BLOB_MAX).optional(),
    transports: z.array(z.string().max(32)).max(10).optional(),
    publicKeyAlgorithm: z.number().int().optional(),
    publicKey: base64url(BLOB_MAX).optional(),
  }),
})

const authenticationSchema = z.object({
  ...credentialBase,
  response: z.object({
    clientDataJSON: base64url(BLOB_MAX),
    authenticatorData: base64url(BLOB_MAX),
    signature: base64url(BLOB_MAX),
    userHandle: base64url(BLOB_MAX).optional(),
  }),
})

export function parseRegistrationResponse(value: unknown): RegistrationResponseJSON | undefined {
  const result = registrationSchema.safeParse(value)
  return result.success ? (result.data as RegistrationResponseJSON) : undefined
}

export function parseAuthenticationResponse(value: unknown): AuthenticationResponseJSON | undefined {
  const result = authenticationSchema.safeParse(value)
  return result.success ? (result.data as AuthenticationResponseJSON) : undefined
}

/** Transports a browser may report (WebAuthn Level 3, 5.8.4); anything else is not stored. */
const TRANSPORTS = new Set(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb'])

export function knownTransports(values: readonly string[] | undefined): string[] {
  return [...new Set((values ?? []).filter((t) => TRANSPORTS.has(t)))]
}

export const PASSKEY_NAME_MAX = 64

/** A passkey's name as typed: trimmed, 1 to 64 characters, no control characters; undefined otherwise. */
export function parsePasskeyName(value: unknown): string | undefined {
  if (typeof value !== 'string' || hasControlCharacter(value)) return undefined
  const name = value.trim()
  return name.length > 0 && name.length <= PASSKEY_NAME_MAX ? name : undefined
}
