import { sha256Hex } from '../../lib/crypto.js'
import type { Db } from '../../db/connect.js'
import type { EmailTokenPurpose } from '../../db/schema.js'
import { LIFETIMES } from '../../limits/policy.js'
import { generateEmailLinkToken, isEmailLinkToken } from '../../lib/tokens.js'
import { type LiveEmailToken, consumeEmailToken, findLiveEmailToken, insertEmailToken } from '../../repositories/email-tokens.js'

/*
 * The single-use links Gatehouse mails (docs/accounts.md "Your account"). The token is 32 random bytes
 * with a prefix naming its purpose; the database holds only its SHA-256 digest, and it is
 * looked up by that digest, never compared as text. A link is used by one UPDATE … WHERE
 * used_at IS NULL RETURNING, so two uses of one link cannot both succeed.
 */

/** The page each link opens; the token travels as `?token=`, which request logs redact (src/lib/log-options.ts). */
export const EMAIL_LINK_PATHS: Record<EmailTokenPurpose, string> = {
  'verify-email': '/verify-email',
  'reset-password': '/reset-password',
  'change-email': '/confirm-email',
  'cancel-email-change': '/cancel-email-change',
}

/** A new link for `email` of the user; returns the URL to mail, the only place the token ever is. */
export async function issueEmailLink(
  db: Db,
  publicUrl: string,
  link: { purpose: EmailTokenPurpose; userId: string; email: string; now: Date },
): Promise<string> {
  const token = generateEmailLinkToken(link.purpose)
  await insertEmailToken(db, {
    tokenHash: sha256Hex(token),
    purpose: link.purpose,
    userId: link.userId,
    email: link.email,
    now: link.now,
    expiresAt: new Date(link.now.getTime() + LIFETIMES.emailLinkMs[link.purpose]),
  })
  return `${publicUrl}${EMAIL_LINK_PATHS[link.purpose]}?token=${token}`
}

/** The link's account and address while it works; nothing is used up. Malformed tokens cost no query. */
export function peekEmailLink(db: Db, purpose: EmailTokenPurpose, token: unknown, now: Date): Promise<LiveEmailToken | undefined> {
  if (!isEmailLinkToken(purpose, token)) return Promise.resolve(undefined)
  return findLiveEmailToken(db, sha256Hex(token), purpose, now)
}

/** Uses the link up, once; undefined when it is unknown, used, expired, or (with `userId`) another account's. */
export function useEmailLink(
  db: Db,
  purpose: EmailTokenPurpose,
  token: unknown,
  now: Date,
  userId?: string,
): Promise<LiveEmailToken | undefined> {
  if (!isEmailLinkToken(purpose, token)) return Promise.resolve(undefined)
  return consumeEmailToken(db, { tokenHash: sha256Hex(token), purpose, now, ...(userId === undefined ? {} : { userId }) })
}
