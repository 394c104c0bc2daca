import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { DeviceConsent } from '../../../oauth/index.js'
import type { Services } from '../../../services.js'
import { actorOf } from '../../audit.js'
import { render } from '../../render.js'
import { requireUser } from '../../session.js'

/*
 * The user's side of the device flow (RFC 8628 3.3; docs/oauth-endpoints.md "Device flow"): type
 * the code, see the consent page every flow shows, answer. Logged-in users only (a visitor logs
 * in, then comes back to the same URL, the code kept); the second-factor policy's `authorize`
 * area, as consent is (src/http/second-factor-gate.ts). `?user_code=` only fills the field: the
 * user still presses Continue, then Authorize (5.4).
 */

const TITLE = 'Connect a device'
const WRONG = 'That code is not valid: it may be mistyped, used already or expired. Check the code on your device, or start again there.'
const TOO_MANY = 'Too many codes were typed. Wait a while and try again.'

function codePage(
  request: FastifyRequest,
  reply: FastifyReply,
  fields: { userCode: string; codeError?: string; formError?: string },
  status = 200,
) {
  return render(request, reply, 'oauth/device.eta', { title: TITLE, codeError: undefined, formError: undefined, ...fields }, status)
}

function consentPage(request: FastifyRequest, reply: FastifyReply, consent: DeviceConsent) {
  return render(request, reply, 'oauth/consent.eta', {
    title: `Authorize ${consent.appName}`,
    appName: consent.appName,
    ownerEmail: consent.ownerEmail,
    verified: consent.verified,
    homepageUrl: consent.homepageUrl,
    privacyPolicyUrl: consent.privacyPolicyUrl,
    scopes: consent.scopes,
    apis: consent.apis,
    tokenFlow: false,
    device: { requestId: consent.requestId, userCode: consent.userCode },
  })
}

export default async function deviceRoutes(app: FastifyInstance, { device }: Services): Promise<void> {
  const config = { secondFactorArea: 'authorize' } as const

  app.get<{ Querystring: { user_code?: unknown } }>('/device', { config, preHandler: requireUser }, async (request, reply) => {
    const prefill = typeof request.query.user_code === 'string' ? request.query.user_code.slice(0, 20) : ''
    return codePage(request, reply, { userCode: prefill })
  })

  app.post<{ Body: Record<string, unknown> }>(
    '/device',
    { config, preHandler: [app.csrfProtection, requireUser] },
    async (request, reply) => {
      const typed = request.body?.user_code
      const shown = typeof typed === 'string' ? typed.slice(0, 20) : ''
      const answer = await device.checkUserCode(typed, { userId: request.user!.id, address: request.ip })
      if (answer.kind === 'too-many') {
        reply.header('retry-after', String(answer.retryAfterSeconds))
        return codePage(request, reply, { userCode: shown, formError: TOO_MANY }, 429)
      }
      if (answer.kind === 'wrong-code') return codePage(request, reply, { userCode: shown, codeError: WRONG }, 400)
      return consentPage(request, reply, answer.consent)
    },
  )

  app.post<{ Body: Record<string, unknown> }>(
    '/device/answer',
    { config, preHandler: [app.csrfProtection, requireUser] },
    async (request, reply) => {
      const body = request.body ?? {}
      const actor = { ...actorOf(request), userId: request.user!.id }
      const answered = await device.answer(actor, { requestId: body.request_id, decision: body.decision })
      if (answered === 'approved') {
        return render(request, reply, 'oauth/device-done.eta', {
          title: 'Device connected',
          message: 'Done. Go back to your device: it continues on its own in a few seconds.',
        })
      }
      if (answered === 'denied') {
        return render(request, reply, 'oauth/device-done.eta', {
          title: 'Device refused',
          message: 'The device was refused and gets no access. You can close this page.',
        })
      }
      const message =
        answered === 'incomplete'
          ? 'The form was incomplete. Type the code again.'
          : 'This request was already answered or has expired. Start again on your device.'
      return render(request, reply, 'oauth/error.eta', { title: 'Device request not answered', message }, 400)
    },
  )
}
