import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../../../services.js'
import { clientAddressKey } from '../../../limits/index.js'
import { fieldText } from '../../../accounts/index.js'
import { actorOf } from '../../audit.js'
import { clearCookie, cookieValue } from '../../cookies.js'
import { render } from '../../render.js'
import { allowPasskeyScripts } from '../../page-security.js'
import { safeNextPath } from '../../session.js'
import { passkeysOnly, refusalsAsJson, setChallengeCookie, takeChallengeCookie } from './passkey-ceremony.js'
import { LOCKOUT_LOG, SUSPENDED, TOO_MANY, UNDER_ATTACK, allowFormRedirectToNext, startLoggedInSession } from './login.js'

const WRONG_CODE = 'That code is not right. Type the current code of your authenticator app, or a recovery code.'
/** SECOND_FACTOR_LOCK_AFTER wrong codes in a row (docs/accounts.md "Two-factor authentication"): the app's codes wait for another factor. */
const LOCKED =
  'Too many wrong codes were typed for this account, so authenticator app codes are not accepted now. Use a recovery code or a passkey; that unlocks the app.'

/** Back to the log-in page to start again: the pending log-in ended or never was. */
function startAgain(reply: FastifyReply, deps: Services, next: string | undefined) {
  clearPendingLogInCookie(reply, deps)
  return reply.redirect(`/login?second_factor=expired${next ? `&next=${encodeURIComponent(next)}` : ''}`, 303)
}

/** Ends the pending log-in's cookie: its log-in finished, or it must start again (also for a passkey's second step). */
export function clearPendingLogInCookie(reply: FastifyReply, deps: Services): void {
  clearCookie(reply, deps, 'pendingLogin')
}

/**
 * The log-in's second step (docs/accounts.md "Two-factor authentication"): after the right password for
 * an account with a second factor, the browser holds a pending log-in (src/accounts/second-factor/pending-login.ts)
 * and comes here for a code of its authenticator app, or one of its recovery codes.
 */
export default async function secondFactorStepRoutes(app: FastifyInstance, deps: Services) {
  const pendingIdOf = (request: FastifyRequest) => cookieValue(request, deps, 'pendingLogin')
  const page = async (request: FastifyRequest, reply: FastifyReply, next: string | undefined, formError?: string, status = 200) => {
    const factors = (await deps.accounts.pendingLogInFactors(pendingIdOf(request))) ?? { totp: true, passkeys: 0, recoveryCodes: 1 }
    await allowFormRedirectToNext(deps, reply, next)
    // The passkey form's scripts, only where the account has a passkey to offer and passkeys can work (docs/accounts.md "Passkeys").
    const passkeyScripts = factors.passkeys > 0 && deps.passkeysAvailable
    if (passkeyScripts) allowPasskeyScripts(reply, deps.config.publicUrl)
    return render(
      request,
      reply,
      'account/second-factor.eta',
      { title: 'Two-factor authentication', next: next ?? '', formError, factors, passkeyScripts },
      status,
    )
  }

  app.get<{ Querystring: Record<string, string | undefined> }>('/login/second-factor', async (request, reply) => {
    const next = safeNextPath(request.query.next)
    if (request.user) return reply.redirect(next ?? '/applications', 303)
    if (!(await deps.accounts.pendingLogIn(pendingIdOf(request)))) return startAgain(reply, deps, next)
    return page(request, reply, next)
  })

  // The passkey step's JSON endpoints: their own error handler and check, in a plugin of their own.
  await app.register(async function passkeyStepApi(api) {
    api.setErrorHandler(refusalsAsJson)
    api.addHook('preHandler', passkeysOnly(deps))
    passkeyStep(api, deps, pendingIdOf)
  })

  app.post<{ Body: Record<string, unknown> }>('/login/second-factor', { preHandler: app.csrfProtection }, async (request, reply) => {
    const next = safeNextPath(request.body?.next)
    const address = clientAddressKey(request.ip)
    const result = await deps.accounts.submitSecondFactor(actorOf(request), pendingIdOf(request), {
      code: fieldText(request.body, 'code'),
      address,
      deviceCookie: cookieValue(request, deps, 'device'),
    })
    switch (result.kind) {
      case 'expired':
        return startAgain(reply, deps, next)
      case 'suspended':
        clearPendingLogInCookie(reply, deps)
        return page(request, reply, next, SUSPENDED, 403)
      case 'refused':
        reply.header('retry-after', String(result.retryAfterSeconds))
        return page(request, reply, next, result.throttle === 'account-under-attack' ? UNDER_ATTACK : TOO_MANY, 429)
      case 'locked':
        return page(request, reply, next, LOCKED, 403)
      case 'failed':
        for (const kind of result.filled) request.log.warn({ throttle: kind, address }, LOCKOUT_LOG[kind])
        return result.ended ? startAgain(reply, deps, next) : page(request, reply, next, WRONG_CODE, 401)
      case 'ok':
        clearPendingLogInCookie(reply, deps)
        await startLoggedInSession(request, reply, deps, result)
        return reply.redirect(next ?? '/applications', 303)
    }
  })
}

const json = (reply: FastifyReply, status: number, body: Record<string, unknown>) =>
  reply.code(status).header('cache-control', 'no-store').send(body)

const EXPIRED_JSON = { error: 'This log-in expired. Log in again.', redirect: '/login?second_factor=expired' }

/**
 * A passkey as the second step (docs/accounts.md "Passkeys"): options limited to the pending log-in's
 * account's passkeys, then the assertion, which counts like a code (src/accounts/second-factor/pending-login.ts).
 * JSON, called by /static/passkeys.js; the challenge is held in the WebAuthn cookie as on /login.
 */
function passkeyStep(app: FastifyInstance, deps: Services, pendingIdOf: (request: FastifyRequest) => string | undefined) {
  app.post('/login/second-factor/passkey/options', { preHandler: app.csrfProtection }, async (request, reply) => {
    const pending = await deps.accounts.pendingLogIn(pendingIdOf(request))
    if (!pending) return json(reply, 400, EXPIRED_JSON)
    const start = await deps.accounts.passkeyOptionsForUser(pending.userId, request.ip)
    if (start.kind === 'none')
      return json(reply, 400, { error: 'This account has no passkey. Use your authenticator app or a recovery code.' })
    if (start.kind === 'refused') {
      reply.header('retry-after', String(start.retryAfterSeconds))
      return json(reply, 429, { error: TOO_MANY })
    }
    setChallengeCookie(reply, deps, start.challengeId)
    return json(reply, 200, { options: start.options })
  })

  app.post<{ Body: Record<string, unknown> | undefined }>(
    '/login/second-factor/passkey',
    { preHandler: app.csrfProtection },
    async (request, reply) => {
      const next = safeNextPath(request.body?.next)
      const address = clientAddressKey(request.ip)
      const result = await deps.accounts.submitSecondFactor(actorOf(request), pendingIdOf(request), {
        code: '',
        passkey: { response: request.body?.response, challengeId: takeChallengeCookie(request, reply, deps) },
        address,
        deviceCookie: cookieValue(request, deps, 'device'),
      })
      switch (result.kind) {
        case 'expired':
          clearPendingLogInCookie(reply, deps)
          return json(reply, 400, EXPIRED_JSON)
        case 'suspended':
          clearPendingLogInCookie(reply, deps)
          return json(reply, 403, { error: SUSPENDED })
        case 'refused':
          reply.header('retry-after', String(result.retryAfterSeconds))
          return json(reply, 429, { error: result.throttle === 'account-under-attack' ? UNDER_ATTACK : TOO_MANY })
        case 'locked':
          return json(reply, 403, { error: LOCKED })
        case 'failed':
          for (const kind of result.filled) request.log.warn({ throttle: kind, address }, LOCKOUT_LOG[kind])
          if (result.ended) clearPendingLogInCookie(reply, deps)
          return json(reply, 400, result.ended ? EXPIRED_JSON : { error: 'The passkey could not be verified. Try again.' })
        case 'ok':
          clearPendingLogInCookie(reply, deps)
          await startLoggedInSession(request, reply, deps, result)
          return json(reply, 200, { redirect: next ?? '/applications' })
      }
    },
  )
}
