import { isUuid } from '../../lib/uuid.js'
import { lockApplicationsOfOwner } from '../../repositories/applications.js'
import { deleteUserRow, lockUser } from '../../repositories/users.js'
import { type RevocationContext, revoke } from '../../revocation/revoke.js'

/**
 * Deletes an account and everything it holds, in one transaction: its applications (each one's
 * tokens revoked and announced, as deleting it from the console does), every token issued to
 * the user for any application (announced by digest), and then the user row, whose grants,
 * codes, tokens, sessions, consent requests and mailed links go with it (ON DELETE CASCADE).
 * Caches here and in resource APIs' verifiers drop the tokens when, and only if, it commits.
 *
 * The one way an account is deleted: by its owner ("Delete account") and by an operator alike.
 * Returns the address the account had (for a confirmation mail), or undefined when there was no
 * such account.
 */
export async function deleteUserAccount(
  ctx: RevocationContext,
  userId: string,
  now: Date,
): Promise<{ email: string; applications: number } | undefined> {
  if (!isUuid(userId)) return undefined
  return ctx.db.transaction().execute(async (trx) => {
    // Locked first: no code or token can be issued to the user, nor an application registered,
    // until the transaction ends (each takes a key-share lock on the user's row).
    const user = await lockUser(trx, userId)
    if (!user) return undefined
    const applications = await lockApplicationsOfOwner(trx, userId)
    for (const applicationId of applications) {
      await revoke({ db: trx, bus: ctx.bus }, { kind: 'application-deleted', applicationId }, now)
    }
    await revoke({ db: trx, bus: ctx.bus }, { kind: 'user-deleted', userId }, now)
    await deleteUserRow(trx, userId)
    return { email: user.email, applications: applications.length }
  })
}
