import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../../../services.js'
import { fieldText } from '../../../accounts/index.js'
import { actorOf } from '../../audit.js'
import { render } from '../../render.js'
import { requireUser, safeNextPath, sessionIdOf } from '../../session.js'

type ReauthQuery = { Querystring: { next?: unknown } }
type FormBody = { Body: Record<string, unknown> }

/** Where a confirmation without a `next` ends: the console's first page. */
const DEFAULT_NEXT = '/applications'

/**
 * "Confirm it's you" ("sudo mode", docs/accounts.md "Re-authentication"): the password again, after which
 * the sensitive actions are open to this session for REAUTH_WINDOW_MINUTES
 * (src/http/recent-auth.ts). `next` is where the refused page or form came from; only a local
 * path (safeNextPath) is followed. A current code of the account's authenticator app is the
 * second way to confirm (src/accounts/sessions/confirm-session.ts).
 */
export default async function reauthRoutes(app: FastifyInstance, deps: Services) {
  const page = async (request: FastifyRequest, reply: FastifyReply, view: { next: string; error?: string }, status = 200) =>
    render(
      request,
      reply,
      'account/reauth.eta',
      {
        title: "Confirm it's you",
        email: request.user?.email ?? '',
        next: view.next,
        error: view.error ?? null,
        windowMinutes: Math.round(deps.config.reauthWindowMs / 60_000),
        // A second way to confirm, for an account with an authenticator app.
        totp: request.user ? (await deps.accounts.secondFactorStatus({ userId: request.user.id })).totp : false,
      },
      status,
    )

  app.get<ReauthQuery>('/reauth', { preHandler: requireUser }, async (request, reply) =>
    page(request, reply, { next: safeNextPath(request.query.next) ?? DEFAULT_NEXT }),
  )

  app.post<FormBody>('/reauth', { preHandler: [app.csrfProtection, requireUser] }, async (request, reply) => {
    const next = safeNextPath(fieldText(request.body, 'next')) ?? DEFAULT_NEXT
    const user = request.user
    if (!user) return reply.redirect('/login', 303)
    const code = fieldText(request.body, 'code')
    const proof =
      code !== '' ? { kind: 'code' as const, code } : { kind: 'password' as const, password: fieldText(request.body, 'password') }
    const result = await deps.accounts.reauthenticate({ ...actorOf(request), userId: user.id }, sessionIdOf(request, deps), proof)
    switch (result.kind) {
      case 'confirmed':
        return reply.redirect(next, 303)
      case 'wrong-password':
        return page(request, reply, { next, error: 'The password is not right.' }, 400)
      case 'wrong-code':
        return page(request, reply, { next, error: 'That code is not right. Type the code your authenticator app shows now.' }, 400)
      case 'locked':
        return page(
          request,
          reply,
          {
            next,
            error:
              'Too many wrong codes were typed for this account, so authenticator app codes are not accepted now. Confirm with your password; a log-in with a recovery code or a passkey unlocks the app.',
          },
          403,
        )
      case 'limited':
        reply.header('retry-after', String(result.retryAfterSeconds))
        return page(request, reply, { next, error: 'Too many wrong passwords or codes. Wait a few minutes and try again.' }, 429)
    }
  })
}
