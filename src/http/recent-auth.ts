import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../services.js'
import { safeNextPath } from './session.js'

/**
 * Where a refused POST sends its user back to after "Confirm it's you": the page its form was on
 * (an application's page, a confirmation page), never the POST itself, which is not replayed.
 */
export type ReturnTo = (request: FastifyRequest) => string

/** /reauth with the page to come back to. */
export function reauthLocation(next: string | undefined): string {
  return next === undefined ? '/reauth' : `/reauth?next=${encodeURIComponent(next)}`
}

/**
 * preHandler of the sensitive actions ("sudo mode", docs/decisions/012-reauthentication-and-policy.md):
 * a new client secret, deleting an application, every /admin action, second-factor changes. The
 * session's last confirmation (its log-in, or a password typed at /reauth since) must be within
 * REAUTH_WINDOW_MINUTES of the clock's now; otherwise a GET is sent to /reauth and comes back to
 * itself, and a POST is sent to /reauth and comes back to `returnTo` (the page its form was
 * on), having done nothing. Register it after csrfProtection, and after requireUser: without a
 * user it does nothing (requireUser has answered).
 *
 * The Account forms that already ask for the current password (change password, change email,
 * delete account) do not use it: that password is the confirmation, and asking twice in a row
 * would teach nothing but impatience.
 */
/** Whether the user's session was confirmed within REAUTH_WINDOW_MINUTES (the JSON endpoints' check). */
export function confirmedRecently(deps: Pick<Services, 'config' | 'clock'>, user: { confirmedAt: Date }): boolean {
  return deps.clock().getTime() - user.confirmedAt.getTime() <= deps.config.reauthWindowMs
}

export function requireRecentAuth(deps: Pick<Services, 'config' | 'clock'>, returnTo?: ReturnTo) {
  return async function recentAuth(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const user = request.user
    if (!user) return
    if (confirmedRecently(deps, user)) return
    const back = request.method === 'GET' || request.method === 'HEAD' ? request.url : returnTo?.(request)
    await reply.redirect(reauthLocation(safeNextPath(back)), 303)
  }
}
