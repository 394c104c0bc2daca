import { deleteSessionsOfUserKeys } from '../../repositories/sessions.js'
import { type RevocationContext, revoke } from '../../revocation/revoke.js'
import { sha256Hex } from '../../lib/crypto.js'

/** OpenID Connect's `sid`: stable for the session, and tells nothing of the cookie or its stored digest. */
export function sessionSid(idHash: string): string {
  return sha256Hex(`gatehouse sid ${idHash}`).slice(0, 32)
}

/**
 * The one way an account's sessions are ended on purpose ("Log out of all other sessions", a
 * password change or reset, a factor added, the operator's reset of the second factor or
 * suspension, the eviction of an address's earlier holders): every session of the user but the
 * one whose stored digest is `keepSessionKey` (none kept when undefined) ends, and with them every
 * refresh-token family the user approved in a browser session (OpenID Connect `sid`) but the kept
 * one's, and those families' access tokens (docs/expiring-tokens.md "Revocation"). In the caller's transaction (`ctx.db`), or in a
 * transaction of its own: the revocation's notice goes out only if the sessions' end commits.
 * How many sessions ended.
 *
 * Sessions that end without anyone's intent do not come here: the janitor's expired ones
 * (src/limits/janitor.ts) and the oldest beyond MAX_SESSIONS_PER_USER (startSession) leave their
 * families to their own lifetime, until the user ends their sessions on purpose: then every
 * family approved in a session but the kept one ends, those of such earlier sessions too.
 */
export function endSessionsOfUser(ctx: RevocationContext, userId: string, now: Date, keepSessionKey?: string): Promise<number> {
  const end = async (trx: RevocationContext['db']): Promise<number> => {
    const ended = await deleteSessionsOfUserKeys(trx, userId, keepSessionKey)
    // By user, not by the ended sessions' sids: a family approved in a session that expired or was
    // evicted earlier (below) has no session row left to end, and must not outlive this either.
    const keptSid = keepSessionKey === undefined ? null : sessionSid(keepSessionKey)
    await revoke({ db: trx, bus: ctx.bus }, { kind: 'user-sessions-ended', userId, keptSid }, now)
    return ended.length
  }
  return ctx.db.isTransaction ? end(ctx.db) : ctx.db.transaction().execute(end)
}
