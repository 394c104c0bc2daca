import type { Db } from '../../db/connect.js'
import { voidAllEmailTokens } from '../../repositories/email-tokens.js'
import { deletePendingLoginsOfUser } from '../../repositories/pending-logins.js'
import { clearProfile } from '../../repositories/profiles.js'
import { deleteSecondFactors, refreshSecondFactor } from '../../repositories/second-factor.js'
import { bumpCredentialVersion } from '../../repositories/users.js'
import type { RevocationBus } from '../../revocation/bus.js'
import { revoke } from '../../revocation/revoke.js'
import { endSessionsOfUser } from '../sessions/end-sessions.js'

/*
 * Every recovery closes the other doors (docs/accounts.md "Account recovery",
 * docs/decisions/010-account-recovery.md). Whoever learned the password may have asked for a
 * change of address and be waiting for the link, or collected a device cookie that skips the
 * account-under-attack limit; a password reset or change, "Log out of all other sessions" and an
 * operator's suspension take both away.
 *
 * An account opened with someone else's address ("pre-hijacking") may have logged in and granted
 * applications access before its address was proven; so the first proof of an address (a
 * verification or reset link) for an account that never proved one evicts whoever opened it,
 * and nothing they set up survives: not their factors, which would let them sign in with a passkey
 * and stop the owner at a second step the owner does not have, nor their profile.
 */

/**
 * In the caller's transaction (after it locked or changed the user's row): every pending mailed
 * link of the account (verification, reset, change of address, its cancellation) is void, and
 * so is every device cookie issued before (users.credential_version) and every log-in waiting for
 * its second factor (made with the password before: src/accounts/second-factor/pending-login.ts).
 */
export async function closeOtherDoors(trx: Db, userId: string, now: Date): Promise<void> {
  await voidAllEmailTokens(trx, userId, now)
  await bumpCredentialVersion(trx, userId)
  await deletePendingLoginsOfUser(trx, userId)
}

/**
 * In the caller's transaction, after it locked the user's row: everything the account did
 * before is revoked (announced through revoke()): grants, tokens, codes, open consent requests;
 * sessions end, except `keepSessionHash`'s (the browser that proved the address, when it was
 * logged in to this account), and closeOtherDoors. How many tokens were revoked and sessions ended.
 */
export async function evictEarlierHolders(
  trx: Db,
  bus: RevocationBus,
  user: { userId: string; keepSessionHash?: string },
  now: Date,
): Promise<{ tokens: number; sessions: number }> {
  const tokens = await revoke({ db: trx, bus }, { kind: 'user-evicted', userId: user.userId }, now)
  const sessions = await endSessionsOfUser({ db: trx, bus }, user.userId, now, user.keepSessionHash)
  await closeOtherDoors(trx, user.userId, now)
  return { tokens, sessions }
}

/**
 * In the caller's transaction, after it locked the user's row, at the first proof of the account's
 * address: every second factor and its rows (TOTP secret and enrolment, recovery codes, passkeys,
 * WebAuthn challenges, pending log-ins) and the profile (display name) go, since whoever set them
 * up before the address was proven may not be its owner (docs/decisions/010-account-recovery.md).
 */
export async function forgetUnprovenSetUp(trx: Db, userId: string, now: Date): Promise<void> {
  await deleteSecondFactors(trx, userId)
  await refreshSecondFactor(trx, userId)
  await clearProfile(trx, userId, now)
}
