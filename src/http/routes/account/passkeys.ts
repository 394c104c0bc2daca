import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type Account, type AssertionFailure, MAX_PASSKEYS_PER_USER, type PasskeyRegistration, fieldText } from '../../../accounts/index.js'
import type { Services } from '../../../services.js'
import { clientAddressKey } from '../../../limits/index.js'
import { actorOf } from '../../audit.js'
import { cookieValue } from '../../cookies.js'
import { allowPasskeyScripts } from '../../page-security.js'
import { render } from '../../render.js'
import { confirmedRecently, reauthLocation, requireRecentAuth } from '../../recent-auth.js'
import { requireUser, safeNextPath } from '../../session.js'
import { formatTime } from '../console/view-models.js'
import { startLoggedInSession } from './login.js'
import { json, passkeysOnly, refusalsAsJson, setChallengeCookie, takeChallengeCookie } from './passkey-ceremony.js'

/*
 * Passkeys (docs/accounts.md "Passkeys"): the page /account/passkeys with its rename and remove forms, and
 * the JSON endpoints the passkey script (views/static/passkeys.js) calls to add a passkey and to
 * sign in with one. The JSON endpoints are CSRF- and same-origin-protected like every form of the
 * pages (the script sends the page's `_csrf` in the body) and answer every refusal as JSON.
 */

type Body = { Body: Record<string, unknown> }

const PASSKEY_NOTICES: Record<string, string> = {
  added: 'Your passkey was added. You can now sign in with it without your password.',
  renamed: 'The passkey was renamed.',
  removed: 'The passkey was removed. It can no longer sign in to your account.',
}

/** The logged-in user acting on their own account; requireUser has turned everyone else away. */
function accountOf(request: FastifyRequest): Account {
  if (!request.user) throw new Error('passkey route reached without a user')
  return { ...actorOf(request), userId: request.user.id }
}

export default async function passkeyRoutes(pages: FastifyInstance, deps: Services) {
  await pages.register(async function passkeyPagesOfUser(app) {
    app.addHook('preHandler', requireUser)
    passkeyPages(app, deps)
  })
  // The passkey script's JSON endpoints: their own error handler and check.
  await pages.register(async function passkeyApi(api) {
    api.setErrorHandler(refusalsAsJson)
    api.addHook('preHandler', passkeysOnly(deps))
    registrationEndpoints(api, deps)
    signInEndpoints(api, deps)
  })
}

interface PasskeysView {
  notice?: string
  formError?: string
  status?: number
  verification?: string
}

/** The passkeys page: the account's passkeys, and the form to add one where passkeys can work. */
async function passkeysPage(request: FastifyRequest, reply: FastifyReply, deps: Services, view: PasskeysView) {
  const { accounts } = deps
  const [passkeys, status] = await Promise.all([accounts.listPasskeys(accountOf(request)), accounts.secondFactorStatus(accountOf(request))])
  // Where passkeys cannot work the page says why (views/account/passkeys.eta) and runs no script.
  if (deps.passkeysAvailable) allowPasskeyScripts(reply, deps.config.publicUrl)
  const list = passkeys.map((p) => ({
    ...p,
    created: formatTime(new Date(p.createdIso)),
    lastUsed: p.lastUsedIso === null ? 'never' : formatTime(new Date(p.lastUsedIso)),
  }))
  const data = {
    title: 'Passkeys',
    passkeys: list,
    max: MAX_PASSKEYS_PER_USER,
    notice: view.notice,
    formError: view.formError,
    verification: view.verification ?? null,
    // Adding one asks for the password, or a code of the authenticator app when the account has one.
    totp: status.totp,
    passkeyScripts: deps.passkeysAvailable,
  }
  return render(request, reply, 'account/passkeys.eta', data, view.status ?? 200)
}

/** GET /account/passkeys and its two forms, which work without JavaScript. */
function passkeyPages(app: FastifyInstance, deps: Services) {
  const { accounts } = deps
  // Second-factor changes are sensitive actions ("sudo mode", docs/accounts.md "Re-authentication").
  const recent = requireRecentAuth(deps, () => '/account/passkeys')
  const page = (request: FastifyRequest, reply: FastifyReply, view: PasskeysView) => passkeysPage(request, reply, deps, view)

  app.get<{ Querystring: Record<string, string | undefined> }>('/account/passkeys', { preHandler: recent }, async (request, reply) => {
    const notice = Object.keys(PASSKEY_NOTICES).find((k) => request.query[k] === '1')
    // "Resend verification email" comes back here; the partial shows fixed words per value.
    return page(request, reply, { notice: notice ? PASSKEY_NOTICES[notice] : undefined, verification: request.query.verification })
  })

  app.post<Body>('/account/passkeys/rename', { preHandler: [app.csrfProtection, recent] }, async (request, reply) => {
    const result = await accounts.renamePasskey(accountOf(request), { id: request.body?.id, name: request.body?.name })
    if (result === 'renamed') return reply.redirect('/account/passkeys?renamed=1', 303)
    const formError = result === 'invalid-name' ? 'A name has 1 to 64 characters.' : 'That passkey is not on your account.'
    return page(request, reply, { formError, status: result === 'invalid-name' ? 400 : 404 })
  })

  app.post<Body>('/account/passkeys/remove', { preHandler: [app.csrfProtection, recent] }, async (request, reply) => {
    const result = await accounts.removePasskey(accountOf(request), {
      id: request.body?.id,
      password: fieldText(request.body, 'password'),
      session: { amr: request.user?.amr ?? [], authenticatedAt: request.user?.authenticatedAt ?? new Date(0) },
    })
    switch (result.kind) {
      case 'removed':
        return reply.redirect('/account/passkeys?removed=1', 303)
      case 'not-found':
        return page(request, reply, { formError: 'That passkey is not on your account.', status: 404 })
      case 'wrong-password':
        return page(request, reply, { formError: 'The password is not right. The passkey was not removed.', status: 400 })
      case 'needs-factor':
        return page(request, reply, { formError: LAST_FACTOR(deps.config.reauthWindowMs), status: 400 })
      case 'limited':
        reply.header('retry-after', String(result.retryAfterSeconds))
        return page(request, reply, { formError: 'Too many wrong passwords. Wait a few minutes and try again.', status: 429 })
    }
  })
}

const REGISTRATION_REFUSALS: Record<Exclude<PasskeyRegistration['kind'], 'added'>, [number, string]> = {
  expired: [400, 'The request to add a passkey expired or was already used. Try again.'],
  invalid: [400, 'The passkey could not be verified. Try again, with a passkey that asks for your PIN, fingerprint or face.'],
  duplicate: [400, 'This passkey is already registered.'],
  'limit-reached': [400, `An account may have at most ${MAX_PASSKEYS_PER_USER} passkeys. Remove one first.`],
  unverified: [403, 'Verify your email address before you add a passkey: open the link we mailed you, or ask for a new one on this page.'],
  'wrong-password': [400, 'The password is not right. The passkey was not added.'],
  'wrong-code': [400, 'The code is not right: type the current code of your authenticator app. The passkey was not added.'],
  limited: [429, 'Too many wrong passwords or codes. Wait a few minutes and try again.'],
}

/** Adding a passkey: options, then the authenticator's answer. */
function registrationEndpoints(app: FastifyInstance, deps: Services) {
  const { accounts } = deps
  const notLoggedIn = (reply: FastifyReply) => json(reply, 401, { error: 'You are no longer logged in. Log in and try again.' })
  // "Sudo mode" (docs/accounts.md "Re-authentication"), answered as JSON the script shows, with where to confirm.
  const unconfirmed = (reply: FastifyReply) =>
    json(reply, 403, { error: 'Confirm it is you first: reload the page.', redirect: reauthLocation('/account/passkeys') })

  app.post('/account/passkeys/registration-options', { preHandler: app.csrfProtection }, async (request, reply) => {
    if (!request.user) return notLoggedIn(reply)
    if (!confirmedRecently(deps, request.user)) return unconfirmed(reply)
    const result = await accounts.passkeyRegistrationOptions(accountOf(request), request.ip)
    if (result.kind === 'refused') {
      reply.header('retry-after', String(result.retryAfterSeconds))
      return json(reply, 429, { error: TOO_MANY })
    }
    if (result.kind !== 'ok') {
      const [status, error] = REGISTRATION_REFUSALS[result.kind]
      return json(reply, status, { error })
    }
    setChallengeCookie(reply, deps, result.challengeId)
    return json(reply, 200, { options: result.options })
  })

  app.post<Body>('/account/passkeys/registration', { preHandler: app.csrfProtection }, async (request, reply) => {
    if (!request.user) return notLoggedIn(reply)
    if (!confirmedRecently(deps, request.user)) return unconfirmed(reply)
    const challengeId = takeChallengeCookie(request, reply, deps)
    const result = await accounts.registerPasskey(accountOf(request), {
      response: request.body?.response,
      challengeId,
      name: request.body?.name,
      // Typed on the same form: a recent log-in alone does not add a factor (docs/accounts.md "Passkeys").
      proof: { password: fieldText(request.body, 'password'), appCode: fieldText(request.body, 'code') },
      keepSessionKey: request.user.sessionKey,
    })
    if (result.kind === 'added') return json(reply, 200, { redirect: '/account/passkeys?added=1' })
    if (result.kind === 'limited') reply.header('retry-after', String(result.retryAfterSeconds))
    const [status, error] = REGISTRATION_REFUSALS[result.kind]
    return json(reply, status, { error })
  })
}

const TOO_MANY = 'Too many attempts. Wait a few minutes and try again.'

const LAST_FACTOR = (windowMs: number) =>
  `This passkey is your account's last second factor: removing it needs a log-in with a second factor within the last ${Math.round(windowMs / 60_000)} minutes. Log out, log in with your password and this passkey, then remove it. The passkey was not removed.`

const SIGN_IN_REFUSALS: Record<AssertionFailure, string> = {
  expired: 'The sign-in request expired or was already used. Try again.',
  'unknown-credential': 'This passkey is not registered here (it may have been removed). Log in with your email and password.',
  invalid: 'The passkey could not be verified. Try again.',
  counter: 'This passkey was refused. Log in with your email and password.',
}

/** "Sign in with a passkey" on the log-in page. */
function signInEndpoints(app: FastifyInstance, deps: Services) {
  const { accounts } = deps
  app.post('/login/passkey/options', { preHandler: app.csrfProtection }, async (request, reply) => {
    const result = await accounts.passkeyLoginOptions(request.ip)
    if (result.kind === 'refused') {
      reply.header('retry-after', String(result.retryAfterSeconds))
      return json(reply, 429, { error: TOO_MANY })
    }
    setChallengeCookie(reply, deps, result.challengeId)
    return json(reply, 200, { options: result.options })
  })

  app.post<Body>('/login/passkey', { preHandler: app.csrfProtection }, async (request, reply) => {
    const next = safeNextPath(request.body?.next)
    const address = clientAddressKey(request.ip)
    const result = await accounts.logInWithPasskey(actorOf(request), {
      response: request.body?.response,
      challengeId: takeChallengeCookie(request, reply, deps),
      address,
      deviceCookie: cookieValue(request, deps, 'device'),
    })
    switch (result.kind) {
      case 'refused':
        reply.header('retry-after', String(result.retryAfterSeconds))
        return json(reply, 429, { error: TOO_MANY })
      case 'failed':
        if (result.filled)
          request.log.warn({ throttle: 'address', address }, 'log-in failures from one address reached the limit (passkeys)')
        return json(reply, 400, { error: SIGN_IN_REFUSALS[result.reason] })
      case 'suspended':
        return json(reply, 403, {
          error: 'This account cannot log in. Contact the operator of this service if you think this is a mistake.',
        })
      case 'ok':
        // Possession of the authenticator and its PIN or biometric, which WebAuthn verified (RFC 8176).
        await startLoggedInSession(request, reply, deps, { ...result, amr: ['hwk', 'mfa'] })
        return json(reply, 200, { redirect: next ?? '/applications' })
    }
  })
}
