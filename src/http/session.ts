import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type SessionUser, enrolmentDemand } from '../accounts/index.js'
import type { Services } from '../services.js'
import { clearCookie, cookieNames, cookieValue, setCookie } from './cookies.js'

export { SESSION_COOKIE } from './cookies.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The logged-in console user, or null. Set only in contexts that call registerSession. */
    user: SessionUser | null
  }
}

/**
 * Loads the session user for every request of this context (pages, never the token API). GET
 * /oauth/authorize takes this process's cached read when there is one (src/accounts/sessions/session-cache.ts),
 * unless the second-factor policy would stop that user here: the route acts on a cached user only
 * through the statement that re-checks the session, and otherwise reads it again (rereadSession).
 */
export function registerSession(app: FastifyInstance, deps: Services): void {
  const name = cookieNames(deps.config).session
  const policy = deps.config.requireSecondFactor
  const passesPolicy = (user: SessionUser) => enrolmentDemand(policy, user, 'authorize') === undefined
  app.addHook('onRequest', async function readSession(request) {
    const id = request.cookies[name]
    if (id && request.method === 'GET' && isAuthorizePath(request.url))
      request.user = (await deps.accounts.sessionForAuthorize(id, seenFrom(request), passesPolicy)) ?? null
    else request.user = await readUser(request, deps, id)
  })
}

/** The user of session cookie `id`, read from the database (which refreshes the session cache). */
async function readUser(request: FastifyRequest, deps: Services, id: string | undefined): Promise<SessionUser | null> {
  return id ? ((await deps.accounts.resolveSession(id, seenFrom(request))) ?? null) : null
}

/** Whether a request URL is GET /oauth/authorize's path: read from the URL, as Fastify's routeOptions builds an object per read. */
function isAuthorizePath(url: string): boolean {
  return url.startsWith(AUTHORIZE_PATH) && (url.length === AUTHORIZE_PATH.length || url[AUTHORIZE_PATH.length] === '?')
}
const AUTHORIZE_PATH = '/oauth/authorize'

/** The session user read from the database again, in place of a cached read. */
export async function rereadSession(request: FastifyRequest, deps: Services): Promise<void> {
  request.user = await readUser(request, deps, sessionIdOf(request, deps))
}

/** The session id the browser sent, under this configuration's cookie name (src/http/cookies.ts). */
export function sessionIdOf(request: FastifyRequest, deps: Services): string | undefined {
  return cookieValue(request, deps, 'session')
}

/** The session cookie, for SESSION_TTL; its name and attributes come from src/http/cookies.ts. */
export function setSessionCookie(reply: FastifyReply, deps: Services, id: string): void {
  setCookie(reply, deps, 'session', id)
}

export function clearSessionCookie(reply: FastifyReply, deps: Services): void {
  clearCookie(reply, deps, 'session')
}

/**
 * Relative in-app path to return to after log-in; anything else (//evil, https://…) is dropped.
 * Only visible ASCII (%x21-7E) without backslashes: a URI reference has no raw spaces or
 * non-ASCII characters (RFC 3986 2), and Node refuses anything outside Latin-1 in the Location
 * header (ERR_INVALID_CHAR) — a 500 instead of a redirect. Browsers percent-encode such paths.
 */
export function safeNextPath(next: unknown): string | undefined {
  if (typeof next !== 'string' || next.length > 4096) return undefined
  if (!next.startsWith('/') || next.startsWith('//')) return undefined
  if (!/^[\x21-\x5b\x5d-\x7e]+$/.test(next)) return undefined
  return next
}

/** preHandler for pages that need a user: not logged in → log-in page, then back here. */
export async function requireUser(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (!request.user) {
    const next = request.method === 'GET' ? safeNextPath(request.url) : undefined
    await reply.redirect(next ? `/login?next=${encodeURIComponent(next)}` : '/login', 303)
  }
}

/** Where this request comes from, as a new session records it ("Active sessions"). */
export function seenFrom(request: FastifyRequest): { userAgent: string | undefined; ip: string } {
  return { userAgent: request.headers['user-agent'], ip: request.ip }
}

/**
 * Ends this browser's session cookie and form tokens, after its session was deleted (log-out,
 * a password reset, account deletion): a new CSRF secret, so forms of the old session stop working.
 */
export function forgetSession(request: FastifyRequest, reply: FastifyReply, deps: Services): void {
  clearSessionCookie(reply, deps)
  delete request.cookies[cookieNames(deps.config).csrf]
  reply.generateCsrf()
  request.user = null
}
