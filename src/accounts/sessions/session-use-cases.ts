import { type Actor, trailOf } from '../../audit/actor.js'
import type { AuditLog } from '../../audit/audit-log.js'
import type { AccountContext } from '../context.js'
import { type LogInAttempt, type LogInResult, logIn } from '../login/login.js'
import type { SessionCache } from './session-cache.js'
import { type SeenFrom, type SessionUser, endSession, logOut, resolveSessionByKey, sessionKeyOf, startSession } from './sessions.js'

/** How long a console log-in session lives: SESSION_TTL_HOURS (docs/operating/configuration.md). */
export interface SessionSettings {
  readonly ttlMs: number
  /** MAX_SESSIONS_PER_USER: a log-in beyond it ends the oldest (docs/operating/limits.md). */
  readonly maxSessions: number
}

/** Ends this process's cached read of the session with this cookie (log-out, a new log-in). */
function forget(cache: SessionCache, sessionId: string): void {
  const key = sessionKeyOf(sessionId)
  if (key !== undefined) cache.forget(key)
}

/** Log-in, log-out and the session of every page request (docs/accounts.md "Your account"). */
export function sessionUseCases(ctx: AccountContext, audit: AuditLog, sessions: SessionSettings, cache: SessionCache) {
  return { ...logInUseCases(ctx, audit, sessions, cache), ...pageSessionUseCases(ctx, cache) }
}

function logInUseCases(ctx: AccountContext, audit: AuditLog, sessions: SessionSettings, cache: SessionCache) {
  return {
    /** The log-in form's attempt, throttled and recorded (src/accounts/login/login.ts). */
    logIn: (actor: Actor, attempt: LogInAttempt): Promise<LogInResult> =>
      logIn(ctx.db, ctx.clock, ctx.limits, attempt, trailOf(audit, actor)),

    /**
     * After a successful log-in: the session the browser held before ends and a new one starts, so
     * nothing a browser held before (possibly planted by someone else) is valid after (OWASP Session
     * Management Cheat Sheet, "Renew the Session ID After Any Privilege Level Change"). `amr`: the
     * RFC 8176 methods the log-in used (password only unless told). The new id.
     */
    async completeLogIn(
      userId: string,
      previousSessionId: string | undefined,
      from: SeenFrom,
      amr: readonly string[] = ['pwd'],
    ): Promise<string> {
      if (previousSessionId) {
        forget(cache, previousSessionId)
        await endSession(ctx.db, previousSessionId)
      }
      return startSession(ctx.db, userId, ctx.clock(), sessions.ttlMs, { from, maxSessions: sessions.maxSessions, amr })
    },

    /**
     * Log-out of the session `sessionId`, recorded when the actor was logged in by it: the console's
     * "Log out", and the end_session_endpoint (/oauth/logout), which names the relying party that
     * asked (`requestedBy`, OpenID Connect RP-Initiated Logout 1.0).
     */
    logOut: (actor: Actor, sessionId: string, requestedBy?: { clientId: string; name: string }): Promise<void> => {
      forget(cache, sessionId)
      return logOut(ctx, sessionId, ctx.clock(), { userId: actor.userId, audit: trailOf(audit, actor), requestedBy })
    },
  }
}

function pageSessionUseCases(ctx: AccountContext, cache: SessionCache) {
  const readSession = async (key: string, from: SeenFrom) => {
    const user = await resolveSessionByKey(ctx.db, key, ctx.clock(), from)
    cache.remember(key, user)
    return user
  }
  return {
    /**
     * The user of a page request's session cookie, read from the database; runs on every page, so
     * nothing is built here per call. The read also refreshes this process's session cache.
     */
    resolveSession: (sessionId: string, from: SeenFrom): Promise<SessionUser | undefined> => {
      const key = sessionKeyOf(sessionId)
      return key === undefined ? Promise.resolve(undefined) : readSession(key, from)
    },

    /**
     * GET /oauth/authorize's session: this process's read of the last SESSION_CACHE_TTL_MS,
     * marked `cached`, when there is one and `usable` takes it; else a read from the database.
     * Only the statement that re-checks the session may act on a cached read (session-cache.ts).
     */
    sessionForAuthorize(sessionId: string, from: SeenFrom, usable: (user: SessionUser) => boolean): Promise<SessionUser | undefined> {
      const key = sessionKeyOf(sessionId)
      if (key === undefined) return Promise.resolve(undefined)
      const cached = cache.get(key)
      return cached !== undefined && usable(cached) ? Promise.resolve(cached) : readSession(key, from)
    },
  }
}
