import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../../../services.js'
import { fieldText, newPasswordField, parseField } from '../../../accounts/index.js'
import { actorOf } from '../../audit.js'
import { render } from '../../render.js'
import { forgetSession, sessionIdOf } from '../../session.js'

type TokenQuery = { Querystring: { token?: unknown } }
type FormBody = { Body: Record<string, unknown> }

/*
 * The pages mailed links open: verify an address, choose a new password, confirm a new address.
 * Opening a link (GET) never uses it: mail scanners and link previews fetch links on their own,
 * and would spend a single-use link before its owner sees it. The page shows a form; its POST
 * (CSRF-protected, same-origin) uses the link. The token is in the URL only on the GET, whose
 * Referer stays on this origin (Referrer-Policy: same-origin; these pages load nothing from
 * elsewhere), and request logs redact `token` (src/lib/log-options.ts).
 */

const DEAD_LINK =
  'This link has expired or has already been used. Links in our mails work once: verification and email-change links for 24 hours, password-reset links for 1 hour.'

/** An operator suspended the account: nothing about it changes, by link or otherwise, until they unsuspend it. */
function suspendedAccount(request: FastifyRequest, reply: FastifyReply, what: string) {
  const message = `This account is suspended by the operator, so its ${what} cannot be changed. Nothing was changed. If you think this is a mistake, contact the operator.`
  return render(request, reply, 'error.eta', { title: 'Account suspended', message }, 403)
}

function deadLink(request: FastifyRequest, reply: FastifyReply, what: { title: string; retry: { href: string; label: string } }) {
  return render(request, reply, 'account/dead-link.eta', { title: what.title, message: DEAD_LINK, retry: what.retry }, 400)
}

/** The token as the link carries it: one string, or nothing. */
const tokenOf = (value: unknown): string => (typeof value === 'string' && value.length <= 100 ? value : '')

export default async function emailLinkRoutes(app: FastifyInstance, deps: Services) {
  verificationRoutes(app, deps)
  resetRoutes(app, deps)
  emailChangeRoutes(app, deps)
  cancelEmailChangeRoutes(app, deps)
}

/**
 * The verification link: GET shows a button, POST verifies. The first proof of an address opened
 * without the account's own session asks for a new password on the same form (docs/accounts.md "Account
 * recovery"): the password chosen at sign-up may be a squatter's.
 */
function verificationRoutes(app: FastifyInstance, deps: Services) {
  const accounts = deps.accounts
  /* Email verification. */
  const verifyRetry = { href: '/applications', label: 'Log in and ask for a new verification email' }
  const title = 'Verify your email address'
  const page = async (request: FastifyRequest, reply: FastifyReply, token: string, errors: Record<string, string> = {}) => {
    const link = await accounts.verificationLinkState(token, request.user?.id)
    if (!link) return deadLink(request, reply, { title, retry: verifyRetry })
    const status = Object.keys(errors).length > 0 ? 400 : 200
    return render(request, reply, 'account/verify-email.eta', { title, token, ...link, errors }, status)
  }

  app.get<TokenQuery>('/verify-email', async (request, reply) => page(request, reply, tokenOf(request.query.token)))

  app.post<FormBody>('/verify-email', { preHandler: app.csrfProtection }, async (request, reply) => {
    const token = tokenOf(request.body?.token)
    const typed = fieldText(request.body, 'password')
    const password = typed === '' ? undefined : parseField(newPasswordField, typed)
    if (password && !password.ok) return page(request, reply, token, { password: password.error })
    const session = request.user ? { userId: request.user.id, sessionKey: request.user.sessionKey } : undefined
    const result = await accounts.confirmVerification(actorOf(request), token, { session, newPassword: password?.value })
    if (result.kind === 'invalid') return deadLink(request, reply, { title, retry: verifyRetry })
    if (result.kind === 'needs-password') return page(request, reply, token, { password: 'Choose a new password for the account.' })
    if (request.user?.id === result.userId) return reply.redirect('/applications?verified=1', 303)
    return reply.redirect('/login?verified=1', 303)
  })
}

/** Password reset: the second half; the first is /forgot-password. */
function resetRoutes(app: FastifyInstance, deps: Services) {
  const accounts = deps.accounts
  /* Password reset: the second half; the first is /forgot-password. */
  const resetRetry = { href: '/forgot-password', label: 'Ask for a new link' }

  app.get<TokenQuery>('/reset-password', async (request, reply) => {
    const token = tokenOf(request.query.token)
    const email = await accounts.resetLinkEmail(token)
    if (email === undefined) return deadLink(request, reply, { title: 'Choose a new password', retry: resetRetry })
    return render(request, reply, 'account/reset-password.eta', { title: 'Choose a new password', token, email, errors: {} })
  })

  app.post<FormBody>('/reset-password', { preHandler: app.csrfProtection }, async (request, reply) => {
    const token = tokenOf(request.body?.token)
    const password = parseField(newPasswordField, fieldText(request.body, 'password'))
    if (!password.ok) {
      const email = await accounts.resetLinkEmail(token)
      if (email === undefined) return deadLink(request, reply, { title: 'Choose a new password', retry: resetRetry })
      const errors = { password: password.error }
      return render(request, reply, 'account/reset-password.eta', { title: 'Choose a new password', token, email, errors }, 400)
    }
    // An unchecked box is not sent: only its presence asks for it (the page checks it by default).
    const revokeAccess = fieldText(request.body, 'revoke_access') !== ''
    const result = await accounts.resetPassword(actorOf(request), token, { newPassword: password.value, revokeAccess })
    if (result.kind === 'invalid') return deadLink(request, reply, { title: 'Choose a new password', retry: resetRetry })
    if (result.kind === 'suspended') return suspendedAccount(request, reply, 'password')
    // Every session of the account ended, this browser's too if it had one.
    if (sessionIdOf(request, deps)) forgetSession(request, reply, deps)
    return reply.redirect(`/login?${new URLSearchParams({ reset: '1', email: result.email })}`, 303)
  })
}

/** The log-in page, then back to the email-change link's page (request logs redact the token inside `next`). */
const loginBackTo = (token: string) => `/login?${new URLSearchParams({ next: `/confirm-email?${new URLSearchParams({ token })}` })}`

/** The confirmation's refusals that show an error page: status, title, message. */
const CHANGE_REFUSALS = {
  'other-account': [
    403,
    'Request refused',
    'This link belongs to another account than the one you are logged in to. Log out, then open the link again.',
  ],
  taken: [409, 'Address in use', 'Another account now uses this address, so it cannot be yours. Your address did not change.'],
} as const

/** Email change: the second half; the first is /account/email. */
function emailChangeRoutes(app: FastifyInstance, deps: Services) {
  const accounts = deps.accounts
  const title = 'Confirm your new email address'
  const changeRetry = { href: '/account/email', label: 'Ask for a new link' }

  app.get<TokenQuery>('/confirm-email', async (request, reply) => {
    const token = tokenOf(request.query.token)
    const link = await accounts.emailChangeLink(token)
    if (!link) return deadLink(request, reply, { title, retry: changeRetry })
    // Only the account that asked may confirm (docs/accounts.md "Your account"): a browser without a
    // session logs in first and comes back here. The account is named to the requester only:
    // the holder of the new mailbox learns nothing of it.
    const requester = request.user?.id === link.user_id
    return render(request, reply, 'account/confirm-email.eta', {
      title,
      token,
      newEmail: link.email,
      accountEmail: requester ? link.accountEmail : undefined,
      otherAccount: request.user !== null && !requester,
      loginHref: loginBackTo(token),
    })
  })

  app.post<FormBody>('/confirm-email', { preHandler: app.csrfProtection }, async (request, reply) => {
    const token = tokenOf(request.body?.token)
    const result = await accounts.confirmEmailChange(actorOf(request), token)
    switch (result.kind) {
      case 'invalid':
        return deadLink(request, reply, { title, retry: changeRetry })
      case 'needs-login':
        return reply.redirect(loginBackTo(token), 303)
      case 'suspended':
        return suspendedAccount(request, reply, 'email address')
      case 'other-account':
      case 'taken': {
        const [status, refusal, message] = CHANGE_REFUSALS[result.kind]
        return render(request, reply, 'error.eta', { title: refusal, message }, status)
      }
      // Only the requester's own session confirms, and it stays logged in.
      case 'changed':
        return reply.redirect('/account?email_changed=1', 303)
    }
  })
}

/** Cancelling an email change, from the link mailed to the old address. */
function cancelEmailChangeRoutes(app: FastifyInstance, deps: Services) {
  const accounts = deps.accounts
  const cancelRetry = { href: '/forgot-password', label: 'Reset your password' }

  app.get<TokenQuery>('/cancel-email-change', async (request, reply) => {
    const token = tokenOf(request.query.token)
    if (!(await accounts.emailChangeCancelLink(token)))
      return deadLink(request, reply, { title: 'Cancel the change of address', retry: cancelRetry })
    return render(request, reply, 'account/cancel-email-change.eta', { title: 'Cancel the change of address', token, cancelled: false })
  })

  app.post<FormBody>('/cancel-email-change', { preHandler: app.csrfProtection }, async (request, reply) => {
    if (!(await accounts.cancelEmailChange(actorOf(request), tokenOf(request.body?.token))))
      return deadLink(request, reply, { title: 'Cancel the change of address', retry: cancelRetry })
    return render(request, reply, 'account/cancel-email-change.eta', { title: 'Change of address cancelled', token: '', cancelled: true })
  })
}
