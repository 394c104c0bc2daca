import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions, preHandlerAsyncHookHandler } from 'fastify'
import { type Account, fieldText } from '../../../accounts/index.js'
import { qrCodeSvg } from '../../../lib/qr-code.js'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { render } from '../../render.js'
import { requireRecentAuth } from '../../recent-auth.js'
import { requireUser } from '../../session.js'

type FormBody = { Body: Record<string, unknown> }

/** What the page says after a change or a refusal (fixed words: nothing from the query is echoed). */
const NOTICES: Record<string, string> = {
  totp_off: 'The authenticator app was turned off. Log-ins no longer ask for its code.',
  enrolment_expired: 'The set-up was not confirmed within 10 minutes. Start again.',
}

const REFUSALS: Record<string, string> = {
  'wrong-password': 'The password is not right.',
  'wrong-code': 'The code is not right: type the current code of your authenticator app, or an unused recovery code.',
  limited: 'Too many wrong passwords or codes. Wait a few minutes and try again.',
  'not-enabled': 'Two-factor authentication is not set up.',
}

/** No factor before the address is verified (docs/accounts.md "Two-factor authentication"). */
const UNVERIFIED =
  'Verify your email address before you add a second factor: open the link we mailed you, or ask for a new one below. A factor added before would be removed when the address is verified.'

function accountOf(request: FastifyRequest): Account {
  if (!request.user) throw new Error('account route reached without a user')
  return { ...actorOf(request), userId: request.user.id }
}

/** The form's password and code, for turning the app off or new recovery codes. */
const proofOf = (body: unknown) => ({ password: fieldText(body, 'password'), code: fieldText(body, 'code') })

interface StatusView {
  notice?: string
  formError?: string
  form?: string
  verification?: string
}

/** The second-factor page: what the account has, with the forms to change it. */
async function secondFactorPage(request: FastifyRequest, reply: FastifyReply, deps: Services, view: StatusView, status = 200) {
  const data = {
    title: 'Two-factor authentication',
    ...(await deps.accounts.secondFactorStatus(accountOf(request))),
    notice: null,
    formError: null,
    form: null,
    verification: null,
    ...view,
  }
  return render(request, reply, 'account/two-factor.eta', data, status)
}

/** The second-factor page again with the refusal of its form `form` (turning the app off, new recovery codes). */
function refusedPage(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: Services,
  form: 'off' | 'codes',
  result: { kind: keyof typeof REFUSALS; retryAfterSeconds?: number },
) {
  if (result.kind === 'limited') reply.header('retry-after', String(result.retryAfterSeconds))
  return secondFactorPage(request, reply, deps, { form, formError: REFUSALS[result.kind] }, result.kind === 'limited' ? 429 : 400)
}

/** The recovery codes, shown once: at the app's confirmation (`enabled`) or when made anew. */
const codesPage = (request: FastifyRequest, reply: FastifyReply, recoveryCodes: readonly string[], enabled: boolean) =>
  render(request, reply, 'account/recovery-codes.eta', { title: 'Your recovery codes', recoveryCodes, enabled })

/**
 * Account → Two-factor authentication (docs/accounts.md "Two-factor authentication"): the authenticator
 * app's set-up, its confirmation, turning it off, and recovery codes. Codes and secrets appear
 * only in the response that creates them (render() sends no-store).
 */
export default async function secondFactorRoutes(pages: FastifyInstance, deps: Services) {
  await pages.register(async function secondFactorPages(app) {
    app.addHook('preHandler', requireUser)
    secondFactorPageRoutes(app, deps)
  })
}

function secondFactorPageRoutes(app: FastifyInstance, deps: Services) {
  const { accounts } = deps
  // Second-factor changes are sensitive actions ("sudo mode", docs/accounts.md "Re-authentication"): the
  // pages ask for a recent confirmation before they show their forms, and the forms again.
  const recent = requireRecentAuth(deps, () => '/account/two-factor')
  const guarded = { preHandler: [app.csrfProtection, recent] }

  const statusPage = (request: FastifyRequest, reply: FastifyReply, view: StatusView, status = 200) =>
    secondFactorPage(request, reply, deps, view, status)

  app.get<{ Querystring: Record<string, string | undefined> }>('/account/two-factor', { preHandler: recent }, async (request, reply) => {
    const notice = Object.keys(NOTICES).find((k) => request.query[k] === '1')
    // "Resend verification email" comes back here; the partial shows fixed words per value.
    const verification = request.query.verification
    return statusPage(request, reply, { ...(notice ? { notice: NOTICES[notice] } : {}), ...(verification ? { verification } : {}) })
  })

  app.post('/account/two-factor/totp', guarded, async (request, reply) => {
    const started = await accounts.startTotpEnrolment(accountOf(request))
    if (started === 'unverified') return statusPage(request, reply, { formError: UNVERIFIED, form: 'setup' }, 403)
    return reply.redirect(started === 'started' ? '/account/two-factor/totp' : '/account/two-factor', 303)
  })

  setupRoutes(app, deps, { recent, guarded })

  app.post<FormBody>('/account/two-factor/totp/off', guarded, async (request, reply) => {
    const result = await accounts.turnOffTotp(accountOf(request), proofOf(request.body))
    if (result.kind === 'done') return reply.redirect('/account/two-factor?totp_off=1', 303)
    return refusedPage(request, reply, deps, 'off', result)
  })

  app.post<FormBody>('/account/two-factor/recovery-codes', guarded, async (request, reply) => {
    const result = await accounts.regenerateRecoveryCodes(accountOf(request), {
      ...proofOf(request.body),
      keepSessionKey: request.user?.sessionKey,
    })
    if (result.kind === 'done') return codesPage(request, reply, result.recoveryCodes, false)
    return refusedPage(request, reply, deps, 'codes', result)
  })
}

/** The authenticator app's set-up: the QR code and secret, and the confirming code. */
function setupRoutes(
  app: FastifyInstance,
  deps: Services,
  { recent, guarded }: { recent: preHandlerAsyncHookHandler; guarded: RouteShorthandOptions },
) {
  const { accounts } = deps
  const setupPage = async (request: FastifyRequest, reply: FastifyReply, formError?: string, status = 400) => {
    const shown = await accounts.shownTotpEnrolment(accountOf(request))
    if (!shown) return reply.redirect('/account/two-factor?enrolment_expired=1', 303)
    const qrCode = await qrCodeSvg(shown.uri, 'QR code of the secret shown below as text')
    return render(
      request,
      reply,
      'account/totp-setup.eta',
      { title: 'Set up an authenticator app', qrCode, secret: shown.secret, formError },
      formError ? status : 200,
    )
  }
  app.get('/account/two-factor/totp', { preHandler: recent }, async (request, reply) => setupPage(request, reply))

  app.post<FormBody>('/account/two-factor/totp/confirm', guarded, async (request, reply) => {
    const result = await accounts.confirmTotpEnrolment(accountOf(request), {
      code: fieldText(request.body, 'code'),
      password: fieldText(request.body, 'password'),
      keepSessionKey: request.user?.sessionKey,
    })
    switch (result.kind) {
      case 'enabled':
        return codesPage(request, reply, result.recoveryCodes, true)
      case 'wrong-code':
        return setupPage(request, reply, 'That code is not right. Type the code your app shows now.')
      case 'wrong-password':
        return setupPage(request, reply, 'The password is not right. The app was not turned on.')
      case 'limited':
        reply.header('retry-after', String(result.retryAfterSeconds))
        return setupPage(request, reply, REFUSALS.limited, 429)
      case 'expired':
        return reply.redirect('/account/two-factor?enrolment_expired=1', 303)
      case 'unverified':
        return reply.redirect('/account/two-factor', 303)
    }
  })
}
