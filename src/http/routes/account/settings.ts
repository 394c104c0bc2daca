import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type Account, type FieldRefusals, fieldText } from '../../../accounts/index.js'
import { hasControlCharacter } from '../../../lib/text.js'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { render } from '../../render.js'
import { forgetSession, requireUser, sessionIdOf } from '../../session.js'
import { formatTime } from '../console/view-models.js'

type FormBody = { Body: Record<string, unknown> }
type Notices = { Querystring: Record<string, string | undefined> }

const WRONG_PASSWORD = 'The current password is not right.'
const TOO_MANY = 'Too many wrong passwords. Wait a few minutes and try again.'

/** The logged-in user; requireUser has turned everyone else away. */
function userOf(request: FastifyRequest) {
  if (!request.user) throw new Error('account route reached without a user')
  return request.user
}

/** The logged-in user acting on their own account (src/accounts/use-cases.ts). */
const accountOf = (request: FastifyRequest): Account => ({ ...actorOf(request), userId: userOf(request).id })

/** A form's refused fields as the page shows them. */
function fieldErrors(refused: FieldRefusals): Record<string, string> {
  const errors: Record<string, string> = {}
  if (refused.newEmail !== undefined) errors.new_email = refused.newEmail
  if (refused.currentPassword) errors.current_password = WRONG_PASSWORD
  if (refused.newPassword !== undefined) errors.new_password = refused.newPassword
  return errors
}

/** What the Account page says after a change (a fixed list: nothing from the query is echoed). */
const ACCOUNT_NOTICES: Record<string, string> = {
  password_changed: 'Your password was changed. Every other session of your account was logged out.',
  email_changed: 'Your email address was changed.',
  sessions_ended: 'Every other session of your account was logged out.',
  profile_saved: 'Your display name was saved.',
}

/**
 * "Account" in the user menu (docs/accounts.md "Your account"): GET /account, and the change-password,
 * change-email, active-sessions and delete-account pages below it, plus "Resend verification
 * email". Everything here needs a logged-in user.
 */
/** The pages that offer "Resend verification email", by the form's `from`; any other goes back to Your Applications. */
const RESEND_FROM: Record<string, string> = { account: '/account', 'two-factor': '/account/two-factor', passkeys: '/account/passkeys' }

export default async function settingsRoutes(pages: FastifyInstance, deps: Services) {
  await pages.register(async function accountSettingsPages(app) {
    app.addHook('preHandler', requireUser)
    settingsPages(app, deps)
  })
}

function settingsPages(app: FastifyInstance, deps: Services) {
  const { accounts } = deps

  app.get<Notices>('/account', async (request, reply) => {
    const user = userOf(request)
    const notice = Object.keys(ACCOUNT_NOTICES).find((k) => request.query[k] === '1')
    return render(request, reply, 'account/settings.eta', {
      title: 'Account',
      email: user.email,
      emailVerified: user.emailVerified,
      notice: notice ? ACCOUNT_NOTICES[notice] : null,
      verification: request.query.verification ?? null,
      displayName: (await accounts.displayName(accountOf(request))) ?? '',
      displayNameError: null,
    })
  })

  /* The display name (OpenID Connect `name`, scope profile). */
  app.post<FormBody>('/account/profile', { preHandler: app.csrfProtection }, async (request, reply) => {
    const typed = fieldText(request.body, 'display_name')
    const result = await accounts.changeDisplayName(accountOf(request), typed)
    if (result.kind === 'saved') return reply.redirect('/account?profile_saved=1', 303)
    const user = userOf(request)
    return render(
      request,
      reply,
      'account/settings.eta',
      {
        title: 'Account',
        email: user.email,
        emailVerified: user.emailVerified,
        notice: null,
        verification: null,
        displayName: typed,
        displayNameError: result.message,
      },
      400,
    )
  })

  /* "Resend verification email", from Your Applications, this page, and the second-factor pages (which need a verified address). */
  app.post<FormBody>('/account/verification-email', { preHandler: app.csrfProtection }, async (request, reply) => {
    const result = await accounts.resendVerification(accountOf(request))
    const back = RESEND_FROM[fieldText(request.body, 'from')] ?? '/applications'
    if (result.kind === 'limited') reply.header('retry-after', String(result.retryAfterSeconds))
    return reply.redirect(`${back}?verification=${result.kind}`, 303)
  })

  passwordRoutes(app, deps)
  emailRoutes(app, deps)
  sessionRoutes(app, deps)
  deleteRoutes(app, deps)
}

/** Change password. */
function passwordRoutes(app: FastifyInstance, deps: Services) {
  const { accounts } = deps
  /* Change password. */
  const passwordPage = (request: FastifyRequest, reply: FastifyReply, errors: Record<string, string>, status = 200, formError?: string) =>
    render(request, reply, 'account/password.eta', { title: 'Change password', email: userOf(request).email, errors, formError }, status)

  app.get('/account/password', async (request, reply) => passwordPage(request, reply, {}))

  app.post<FormBody>('/account/password', { preHandler: app.csrfProtection }, async (request, reply) => {
    const result = await accounts.changePassword(accountOf(request), {
      sessionId: sessionIdOf(request, deps),
      currentPassword: fieldText(request.body, 'current_password'),
      newPassword: fieldText(request.body, 'new_password'),
    })
    if (result.kind === 'invalid') return passwordPage(request, reply, fieldErrors(result.errors), 400)
    if (result.kind === 'wrong-password') return passwordPage(request, reply, { current_password: WRONG_PASSWORD }, 400)
    if (result.kind === 'limited') {
      reply.header('retry-after', String(result.retryAfterSeconds))
      return passwordPage(request, reply, {}, 429, TOO_MANY)
    }
    return reply.redirect('/account?password_changed=1', 303)
  })
}

/** Change email: the first half; the link mailed to the new address completes it (/confirm-email). */
function emailRoutes(app: FastifyInstance, deps: Services) {
  const { accounts } = deps
  /* Change email: the first half; the link mailed to the new address completes it (/confirm-email). */
  const emailPage = (
    request: FastifyRequest,
    reply: FastifyReply,
    view: { errors?: Record<string, string>; newEmail?: string; sentTo?: string; formError?: string },
    status = 200,
  ) =>
    render(
      request,
      reply,
      'account/email.eta',
      {
        title: 'Change email',
        email: userOf(request).email,
        errors: view.errors ?? {},
        newEmail: view.newEmail ?? '',
        sentTo: view.sentTo ?? null,
        formError: view.formError,
      },
      status,
    )

  app.get('/account/email', async (request, reply) => emailPage(request, reply, {}))

  app.post<FormBody>('/account/email', { preHandler: app.csrfProtection }, async (request, reply) => {
    const typed = fieldText(request.body, 'new_email')
    const shown = hasControlCharacter(typed) ? '' : typed.slice(0, 254)
    const result = await accounts.requestEmailChange(accountOf(request), {
      currentPassword: fieldText(request.body, 'current_password'),
      newEmail: typed,
    })
    switch (result.kind) {
      case 'invalid':
        return emailPage(request, reply, { errors: fieldErrors(result.errors), newEmail: shown }, 400)
      case 'wrong-password':
        return emailPage(request, reply, { errors: { current_password: WRONG_PASSWORD }, newEmail: shown }, 400)
      case 'limited':
        reply.header('retry-after', String(result.retryAfterSeconds))
        return emailPage(request, reply, { newEmail: shown, formError: TOO_MANY }, 429)
      case 'too-many-requests': {
        reply.header('retry-after', String(result.retryAfterSeconds))
        const formError = 'Too many email-change requests for this account or this address. Try again in an hour.'
        return emailPage(request, reply, { newEmail: shown, formError }, 429)
      }
      case 'same-address':
        return emailPage(request, reply, { errors: { new_email: 'This is already your address.' }, newEmail: shown }, 400)
      case 'sent':
        if (!result.mailSent) {
          const formError = 'We could not send the mail just now. Your address did not change; please try again in a few minutes.'
          return emailPage(request, reply, { newEmail: shown, formError }, 503)
        }
        return emailPage(request, reply, { sentTo: result.newEmail })
    }
  })
}

/** Active sessions. */
function sessionRoutes(app: FastifyInstance, deps: Services) {
  const { accounts } = deps
  /* Active sessions. */
  app.get('/account/sessions', async (request, reply) => {
    const sessions = await accounts.listSessions(accountOf(request), sessionIdOf(request, deps))
    return render(request, reply, 'account/sessions.eta', {
      title: 'Active sessions',
      sessions: sessions.map((s) => ({ ...s, created: formatTime(new Date(s.createdIso)), lastSeen: formatTime(new Date(s.lastSeenIso)) })),
    })
  })

  app.post('/account/sessions/others', { preHandler: app.csrfProtection }, async (request, reply) => {
    await accounts.endOtherSessions(accountOf(request), sessionIdOf(request, deps))
    return reply.redirect('/account?sessions_ended=1', 303)
  })
}

/** Delete account. */
function deleteRoutes(app: FastifyInstance, deps: Services) {
  const { accounts } = deps
  /* Delete account. */
  const deletePage = (request: FastifyRequest, reply: FastifyReply, errors: Record<string, string>, status = 200, formError?: string) =>
    render(request, reply, 'account/delete.eta', { title: 'Delete account', email: userOf(request).email, errors, formError }, status)

  app.get('/account/delete', async (request, reply) => deletePage(request, reply, {}))

  app.post<FormBody>('/account/delete', { preHandler: app.csrfProtection }, async (request, reply) => {
    const result = await accounts.closeAccount(accountOf(request), fieldText(request.body, 'password'))
    if (result.kind === 'wrong-password') return deletePage(request, reply, { password: WRONG_PASSWORD.replace('current ', '') }, 400)
    if (result.kind === 'limited') {
      reply.header('retry-after', String(result.retryAfterSeconds))
      return deletePage(request, reply, {}, 429, TOO_MANY)
    }
    forgetSession(request, reply, deps)
    return reply.redirect('/?account_deleted=1', 303)
  })
}
