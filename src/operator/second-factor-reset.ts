import { type MailFrame, secondFactorResetMail } from '../accounts/mails.js'
import type { Mailer } from '../mail/mailer.js'
import { deleteSecondFactors, refreshSecondFactor } from '../repositories/second-factor.js'
import { endSessionsOfUser } from '../accounts/sessions/end-sessions.js'
import { lockUserForChange } from '../repositories/users.js'
import { NotFoundError, type OperatorContext } from './moderation.js'

export interface SecondFactorReset {
  /** TOTP secrets, passkeys and recovery codes removed (enrolments, challenges, pending log-ins not counted). */
  readonly factors: number
  readonly endedSessions: number
  readonly mailSent: boolean
}

/**
 * An operator's reset of a user's second factor (docs/accounts.md "Account recovery", for the user who lost
 * their phone and their recovery codes): the account's TOTP secret, passkeys, recovery codes,
 * unfinished enrolments and pending log-ins go, and every session ends, so that the next log-in
 * is with the password alone and under the policy's eyes (REQUIRE_TWO_FACTOR asks them to enrol
 * again). The account's grants and tokens stay, and so do its mailed links and device cookies;
 * the refresh-token families approved in the ended sessions end with them, as at any log-out
 * (endSessionsOfUser; docs/decisions/012-reauthentication-and-policy.md says why).
 * The user is mailed, so an owner who did not ask hears of it.
 */
export async function resetSecondFactor(
  ctx: OperatorContext & { mailer: Mailer; mailFrame: MailFrame },
  userId: string,
  now: Date,
): Promise<SecondFactorReset> {
  const done = await ctx.db.transaction().execute(async (trx) => {
    const user = await lockUserForChange(trx, userId)
    if (!user) throw new NotFoundError('No such user.')
    const removed = await deleteSecondFactors(trx, userId)
    await refreshSecondFactor(trx, userId)
    const endedSessions = await endSessionsOfUser({ db: trx, bus: ctx.bus }, userId, now)
    const factors = (removed.totp_secrets ?? 0) + (removed.passkeys ?? 0) + (removed.recovery_codes ?? 0)
    return { email: user.email, factors, endedSessions }
  })
  await ctx.record({
    event: 'operator.second_factor_reset',
    userId,
    detail: `${done.factors} factors and codes removed, ${done.endedSessions} sessions ended`,
  })
  const mailSent = await ctx.mailer.send(secondFactorResetMail(ctx.mailFrame, done.email))
  return { factors: done.factors, endedSessions: done.endedSessions, mailSent }
}
