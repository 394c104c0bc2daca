import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import { isUuid } from '../../lib/uuid.js'
import {
  type AuthorizingUser,
  approveAuthorization,
  denyAuthorization,
  findHeldRequest,
  heldRequestParams,
  heldRequestQuery,
  releaseHeldRequest,
} from './authorization.js'
import { type AuthorizeAnswer, type AuthorizeContext, answerIssued, deliverError } from './authorize-answers.js'
import { validateAuthorizationRequest } from './authorize-request.js'
import { readParams } from '../params.js'

/**
 * POST /oauth/authorize: the user's answer to a consent page, which names the held request by
 * id and nothing else. The request is validated again against the application as it is now;
 * it is answered once, by the user it was held for. An approval is recorded in the audit log
 * (`grant.given`); remembered consent gives nothing new and records nothing.
 */
export async function answerConsent(
  ctx: AuthorizeContext,
  form: { heldId: unknown; decision: unknown },
  user: AuthorizingUser | null,
  audit: AuditTrail,
): Promise<AuthorizeAnswer> {
  const incomplete: AuthorizeAnswer = {
    kind: 'error-page',
    message: 'The consent form was incomplete. Go back to the application and start again.',
  }
  const gone: AuthorizeAnswer = {
    kind: 'error-page',
    message: 'This consent page was already answered or has expired. Go back to the application and start again.',
  }
  if (!isUuid(form.heldId) || (form.decision !== 'approve' && form.decision !== 'deny')) return incomplete
  const now = ctx.clock()
  if (!user) {
    // The session ended while the page was open: log in, then the same request again.
    const held = await findHeldRequest(ctx.db, form.heldId, now)
    return held ? { kind: 'login', returnTo: `/oauth/authorize?${heldRequestQuery(held)}` } : gone
  }
  const held = await findHeldRequest(ctx.db, form.heldId, now, user.id)
  if (!held) return gone
  const outcome = await validateAuthorizationRequest(
    readParams(heldRequestParams(held)),
    ctx,
    (id) => ctx.clientDirectory.resolve(id),
    'held',
  )
  if (outcome.kind === 'fatal') return { kind: 'error-page', message: outcome.message }
  if (outcome.kind === 'redirect') return deliverError(ctx, outcome, user)
  const req = outcome.request
  if (form.decision === 'deny') {
    // The user's own answer goes back to the client whatever the trust (docs/decisions/005-trusted-redirects.md).
    return (await releaseHeldRequest(ctx.db, form.heldId, user.id, now))
      ? { kind: 'respond', response: denyAuthorization(req, ctx.issuer) }
      : gone
  }
  const issued = await approveAuthorization(ctx, req, user, now, ctx.issuer, form.heldId)
  if (issued.kind === 'gone' || issued.kind === 'no-grant') return gone
  if (issued.kind === 'issued') {
    await audit.record({
      event: 'grant.given',
      userId: user.id,
      application: { clientId: req.application.client_id, name: req.application.name },
      detail: auditDetail.grantGiven(req.scopes, req.responseType),
    })
  }
  return answerIssued(ctx, req, issued, user)
}
