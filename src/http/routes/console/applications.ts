import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Services } from '../../../services.js'
import { newApplicationFormValues, parseApplicationForm } from '../../../applications/index.js'
import { render } from '../../render.js'
import { ownerOf } from './owner.js'
import { renderApplicationPage } from './application.js'
import { applicationFormView, conversionNotice, formatTime } from './view-models.js'

/** The outcomes of "Resend verification email" that Your Applications reports. */
const VERIFICATION_NOTICES = new Set(['sent', 'not-sent', 'limited', 'already-verified'])

/**
 * Registering an application needs a verified address (docs/accounts.md "Your account"): its owner's email
 * is the developer's identity on consent pages. The page says why and how to verify.
 */
function unverified(request: FastifyRequest, reply: FastifyReply) {
  return render(
    request,
    reply,
    'error.eta',
    {
      title: 'Verify your email address first',
      message:
        'Registering an application needs a verified email address. Open the link we mailed you, or ask for a new one on Your Applications.',
    },
    403,
  )
}

const quotaMessage = (limit: number) => `You have ${limit} applications, the most one account may register. Delete one to register another.`

type ListQuery = { deleted?: string; verified?: string; verification?: string }
type Listed = Awaited<ReturnType<Services['console']['listApplications']>>

/** What "Your Applications" shows: the owner's applications and the notices the query asks for. */
function listView(request: FastifyRequest<{ Querystring: ListQuery }>, { applications, quota }: Listed) {
  return {
    title: 'Your Applications',
    deleted: request.query.deleted === '1',
    quotaMessage: quota.reached ? quotaMessage(quota.limit) : undefined,
    emailVerified: request.user?.emailVerified === true,
    justVerified: request.query.verified === '1',
    verification: VERIFICATION_NOTICES.has(String(request.query.verification)) ? request.query.verification : null,
    applications: applications.map((a) => ({
      id: a.id,
      name: a.name,
      clientId: a.client_id,
      created: formatTime(a.created_at),
      createdIso: a.created_at.toISOString(),
    })),
  }
}

/** GET /applications, GET /applications/new, POST /applications. */
export default async function applicationsRoutes(app: FastifyInstance, deps: Services) {
  app.get<{ Querystring: ListQuery }>('/applications', async (request, reply) => {
    const listed = await deps.console.listApplications(ownerOf(request))
    return render(request, reply, 'console/applications/index.eta', listView(request, listed))
  })

  app.get('/applications/new', async (request, reply) => {
    const check = await deps.console.mayRegister(ownerOf(request))
    if (check.kind === 'unverified') return unverified(request, reply)
    const view = applicationFormView({ kind: 'new' }, newApplicationFormValues(deps.scopes), deps.scopes)
    if (check.kind === 'quota-reached') view.formError = quotaMessage(check.limit)
    return render(request, reply, 'console/applications/form.eta', view)
  })

  app.post<{ Body: Record<string, unknown> }>('/applications', { preHandler: app.csrfProtection }, async (request, reply) => {
    if (deps.console.needsVerification(ownerOf(request))) return unverified(request, reply)
    const form = parseApplicationForm(request.body, deps.scopes)
    if (!form.ok) {
      return render(
        request,
        reply,
        'console/applications/form.eta',
        applicationFormView({ kind: 'new' }, form.values, deps.scopes, form.errors),
        400,
      )
    }
    const registration = await deps.console.registerApplication(ownerOf(request), form.settings)
    if (registration.kind === 'unverified') return unverified(request, reply)
    if (registration.kind === 'quota-reached') {
      const view = applicationFormView({ kind: 'new' }, form.values, deps.scopes)
      view.formError = quotaMessage(registration.limit)
      return render(request, reply, 'console/applications/form.eta', view, 409)
    }
    const { application, clientSecret } = registration
    // A public kind (native, single-page) has no secret (docs/decisions/019-public-clients-and-consent.md).
    // The secret is shown in this response and nowhere else. A redirect would need it to
    // survive until the next request: in the URL (logs, history, Referer), in the database
    // (which holds only its digest), or in a cookie or process memory (which a second process
    // behind the load balancer would not have). So the application page is rendered here,
    // with Cache-Control: no-store (render sets it) so neither the browser nor a proxy keeps
    // a copy. Reloading asks before re-posting, and would register a second application.
    return renderApplicationPage(request, reply, deps.config.publicUrl, application, deps.scopes, {
      clientSecret: clientSecret ?? undefined,
      secretEvent: 'created',
      notice: conversionNotice(form.conversions),
    })
  })
}
