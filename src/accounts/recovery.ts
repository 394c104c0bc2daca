import type { Db } from '../db/connect.js'
import { voidAllEmailTokens } from '../repositories/email-tokens.js'
import { bumpCredentialVersion } from '../repositories/users.js'

/*
 * Every recovery closes the other doors (README "Account recovery",
 * docs/decisions/010-account-recovery.md). Whoever learned the password may have asked for a
 * change of address and be waiting for the link, or collected a device cookie that skips the
 * account-under-attack limit; a password reset or change, "Log out of all other sessions" and an
 * operator's suspension take both away.
 */

/**
 * In the caller's transaction (after it locked or changed the user's row): every pending mailed
 * link of the account (verification, reset, change of address, its cancellation) is void, and
 * so is every device cookie issued before (users.credential_version).
 */
export async function closeOtherDoors(trx: Db, userId: string, now: Date): Promise<void> {
  await voidAllEmailTokens(trx, userId, now)
  await bumpCredentialVersion(trx, userId)
}
