import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type ThrottleKind, parseCredentials } from '../../../accounts/index.js'
import { hasControlCharacter } from '../../../lib/text.js'
import type { Services } from '../../../services.js'
import { clientAddressKey } from '../../../limits/index.js'
import { actorOf } from '../../audit.js'
import { cookieValue, setCookie } from '../../cookies.js'
import { allowFormRedirectTo } from '../../form-action.js'
import { allowPasskeyScripts, rotateCsrfSecret } from '../../page-security.js'
import { render } from '../../render.js'
import { safeNextPath, seenFrom, sessionIdOf, setSessionCookie } from '../../session.js'

const GENERIC_FAILURE = 'Incorrect email or password.'
// Shown only after the right password, so it tells nothing to someone guessing.
export const SUSPENDED = 'This account cannot log in. Contact the operator of this service if you think this is a mistake.'
export const TOO_MANY = 'Too many attempts. Wait a few minutes and try again.'
export const UNDER_ATTACK =
  'Too many failed attempts to log in to this account. Log in from a browser you have logged in with before, or wait and try again.'

/** What a log line says when a limit fills up (docs/operating/limits.md). */
export const LOCKOUT_LOG: Record<ThrottleKind, string> = {
  'account-address': 'log-in failures for one account from one address reached the limit; that pair is refused until the window ends',
  address: 'log-in failures from one address reached the limit (password spraying?); it is refused until the window ends',
  'account-under-attack': 'log-in failures for one account reached the attack limit; only browsers with its device cookie may log in',
  device: 'log-in failures from one device reached the limit; it is refused until the window ends',
  'address-attempts': 'log-in attempts from one address, successful or not, reached the limit; it is refused until the window ends',
  'second-factor': 'wrong second-factor codes for one account reached the limit; its second step is refused until the window ends',
}

/** What the log-in page says after the page that sent the browser there. */
function loginNotice(query: Record<string, string | undefined>): string | undefined {
  if (query.signed_up === '1') {
    return 'If this email was not registered before, its account is ready now, and we sent a link to verify the address. Log in with your email and password.'
  }
  if (query.verified === '1') return 'Your email address is verified. Log in to register applications.'
  if (query.reset === '1') return 'Your password was changed and every session of the account was logged out. Log in with the new password.'
  if (query.second_factor === 'expired') return 'The log-in was not finished in time, or too many codes were wrong. Log in again.'
  return undefined
}

/**
 * A log-in on the way to an authorize request ends, through Gatehouse's redirects, at the
 * client (remembered consent, or an error it may receive): the form must be allowed to go there.
 */
export async function allowFormRedirectToNext(deps: Services, reply: FastifyReply, next: string | undefined): Promise<void> {
  const destination = next === undefined ? undefined : await deps.oauth.authorizeDestination(next)
  if (destination !== undefined) allowFormRedirectTo(reply, destination)
  // "Sign in with a passkey" (src/http/routes/account/passkeys.ts) is the log-in page's one script,
  // where passkeys can work (src/lib/passkey-availability.ts).
  if (deps.passkeysAvailable) allowPasskeyScripts(reply, deps.config.publicUrl)
}

/** GET /login: the form, prefilled with `email` when the link carries one, and the notice of the page that sent the browser here. */
async function loginPage(
  deps: Services,
  request: FastifyRequest<{ Querystring: Record<string, string | undefined> }>,
  reply: FastifyReply,
) {
  const next = safeNextPath(request.query.next)
  // fresh=1: an authorize request asks for a new log-in over this session (prompt=login, max_age).
  if (request.user && request.query.fresh !== '1') return reply.redirect(next ?? '/applications', 303)
  await allowFormRedirectToNext(deps, reply, next)
  return render(request, reply, 'account/login.eta', {
    title: 'Log in',
    email: typeof request.query.email === 'string' && !hasControlCharacter(request.query.email) ? request.query.email.slice(0, 254) : '',
    next: next ?? '',
    notice: loginNotice(request.query),
    mailFailed: request.query.mail === 'failed',
    errors: {},
    passkeyScripts: deps.passkeysAvailable,
  })
}

export default async function loginRoutes(app: FastifyInstance, deps: Services) {
  const allowNext = (reply: FastifyReply, next: string | undefined) => allowFormRedirectToNext(deps, reply, next)

  app.get<{ Querystring: Record<string, string | undefined> }>('/login', (request, reply) => loginPage(deps, request, reply))

  app.post<{ Body: Record<string, unknown> }>('/login', { preHandler: app.csrfProtection }, async (request, reply) => {
    const body = request.body ?? {}
    const next = safeNextPath(body.next)
    const form = parseCredentials(body)
    const email = form.email
    const view = async (status: number, formError: string) => {
      await allowNext(reply, next)
      return render(
        request,
        reply,
        'account/login.eta',
        {
          title: 'Log in',
          email,
          next: next ?? '',
          notice: undefined,
          mailFailed: false,
          errors: {},
          formError,
          passkeyScripts: deps.passkeysAvailable,
        },
        status,
      )
    }

    // Answered before the rate limiter, whose keys are stored text: PostgreSQL refuses U+0000.
    if (!form.ok && form.malformed) return view(400, 'The email or password contains a control character. Type them again.')

    const address = clientAddressKey(request.ip)
    const result = await deps.accounts.logIn(actorOf(request), {
      email: form.ok ? form.email : email.trim().toLowerCase(),
      password: form.ok ? form.password : undefined,
      address,
      deviceCookie: cookieValue(request, deps, 'device'),
    })
    if (result.kind === 'refused') {
      reply.header('retry-after', String(result.retryAfterSeconds))
      return view(429, result.throttle === 'account-under-attack' ? UNDER_ATTACK : TOO_MANY)
    }
    if (result.kind === 'failed') {
      // Logged once, when a limit fills; the refusals after it are not (an attack would flood the log).
      for (const kind of result.filled) request.log.warn({ throttle: kind, address }, LOCKOUT_LOG[kind])
      return view(401, GENERIC_FAILURE)
    }
    if (result.kind === 'suspended') return view(403, SUSPENDED)
    if (result.kind === 'second-factor') {
      setPendingLogInCookie(reply, deps, result.pendingId)
      return reply.redirect(`/login/second-factor${next ? `?next=${encodeURIComponent(next)}` : ''}`, 303)
    }
    await startLoggedInSession(request, reply, deps, result)
    return reply.redirect(next ?? '/applications', 303)
  })
}

/**
 * The pending log-in's cookie (src/accounts/second-factor/pending-login.ts), for the five minutes the pending
 * log-in lives (src/http/cookies.ts); cleared by the second step's end.
 */
function setPendingLogInCookie(reply: FastifyReply, deps: Services, pendingId: string): void {
  setCookie(reply, deps, 'pendingLogin', pendingId)
}

/**
 * After a successful log-in, with the password alone or with its second step: the device cookie,
 * and a new session (recording `amr`, the RFC 8176 methods used) and CSRF secret.
 */
export async function startLoggedInSession(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: Services,
  result: { userId: string; deviceCookie: string; amr?: readonly string[] },
): Promise<void> {
  // Issued at every successful log-in (src/http/cookies.ts).
  setCookie(reply, deps, 'device', result.deviceCookie)

  // A fresh session id (src/accounts/use-cases.ts completeLogIn) and a fresh CSRF secret at every
  // log-in defeat session fixation (OWASP Session Management Cheat Sheet, "Renew the Session ID
  // After Any Privilege Level Change").
  const id = await deps.accounts.completeLogIn(result.userId, sessionIdOf(request, deps), seenFrom(request), result.amr)
  setSessionCookie(reply, deps, id)
  rotateCsrfSecret(request, reply, deps)
}
