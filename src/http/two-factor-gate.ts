import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { EnrolmentDemand, PolicyArea } from '../accounts/two-factor-policy.js'
import { type Services, enrolmentDemand } from '../services.js'
import { render } from './render.js'

/*
 * REQUIRE_TWO_FACTOR applied to every page request (README "Who must enrol"): the decision is
 * enrolmentDemand (src/accounts/two-factor-policy.ts); this file says which area a path is in and
 * what a user who must enrol first is answered.
 */

/**
 * Never gated: leaving (log-out, and deleting the account: nobody must enrol in order to go),
 * logging in and its second step, the mailed links (proving an address, recovering an account),
 * and the pages where a second factor is set up, with the confirmation they may ask for. Anything
 * else under these prefixes is the same page's.
 */
const EXEMPT = [
  '/logout',
  '/oauth/logout',
  '/account/delete',
  '/login',
  '/signup',
  '/forgot-password',
  '/reset-password',
  '/verify-email',
  '/confirm-email',
  '/cancel-email-change',
  '/account/two-factor',
  '/account/passkeys',
  '/reauth',
]

const under = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`)

/** The policy's area of a page request's URL (its path; the query is ignored). */
export function policyAreaOf(url: string): PolicyArea {
  const path = url.split('?', 1)[0] ?? ''
  if (EXEMPT.some((prefix) => under(path, prefix))) return 'exempt'
  if (under(path, '/admin')) return 'admin'
  if (under(path, '/applications')) return 'applications'
  if (under(path, '/oauth/authorize')) return 'authorize'
  return 'console'
}

const WHY: Record<EnrolmentDemand, string> = {
  operator: 'This server asks every operator to set up a second factor before using the admin pages.',
  developer: 'This server asks every developer to set up a second factor before registering or managing applications.',
  everyone: 'This server asks every account to set up a second factor before going on.',
}

/** Whether an authorize query asks for prompt=none (any other prompt may show the page). */
function silentPrompt(query: unknown): boolean {
  const prompt = (query as Record<string, unknown> | undefined)?.prompt
  return typeof prompt === 'string' && prompt.split(' ').includes('none')
}

/**
 * The hook: a logged-in user the policy asks to enrol first gets a page saying so (403), with the
 * ways to enrol, whatever the method; nothing behind it runs. Runs after the session is resolved
 * (registerSession) and before every route's own checks.
 */
export function registerTwoFactorPolicy(app: FastifyInstance, deps: Pick<Services, 'config'>): void {
  if (deps.config.requireTwoFactor === 'none') return
  app.addHook('preHandler', async function twoFactorPolicy(request: FastifyRequest, reply: FastifyReply) {
    await enrolFirst(request, reply, deps)
  })
}

/**
 * The policy's page for this request's user, when it asks them to enrol first; false when the
 * request may go on. The hook's check, and GET /oauth/authorize's after it reads a cached
 * session again (src/http/routes/oauth/authorize.ts).
 */
export async function enrolFirst(request: FastifyRequest, reply: FastifyReply, deps: Pick<Services, 'config'>): Promise<boolean> {
  const policy = deps.config.requireTwoFactor
  // Most requests stop here, before any path is looked at: the authorize request's remembered
  // consent is a hot path (docs/decisions/007-one-statement-hot-paths.md).
  if (policy === 'none' || request.user === null || request.user.secondFactor) return false
  const area = policyAreaOf(request.url)
  const demand = enrolmentDemand(policy, request.user, area)
  if (demand === undefined) return false
  // prompt=none never shows a page: the authorize request answers interaction_required itself.
  if (area === 'authorize' && request.method === 'GET' && silentPrompt(request.query)) return false
  await render(request, reply, 'account/enrol-first.eta', { title: 'Set up a second factor first', why: WHY[demand] }, 403)
  return true
}
