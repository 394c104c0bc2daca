import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type EnrolmentDemand, type PolicyArea, enrolmentDemand, usedSecondFactor } from '../accounts/index.js'
import type { Services } from '../services.js'
import { render } from './render.js'
import { safeNextPath } from './session.js'

/*
 * REQUIRE_TWO_FACTOR applied to every page request (docs/accounts.md "Who must enrol"): the decision is
 * enrolmentDemand (src/accounts/second-factor/policy.ts); this file says which area a route is in and
 * what a user who must enrol first is answered. The area belongs to the route: the admin and
 * console groups of pages (src/http/routes/admin/index.ts, src/http/routes/console/index.ts) and
 * the authorize routes name theirs in their route config; the request's URL is never read, since the router matches the percent-decoded path
 * (`/%61dmin` is `/admin`, RFC 3986 2.3) and a test of the raw URL would miss it.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The second-factor policy's area of the route, set by its group of pages or the route itself (src/http/second-factor-gate.ts). */
    secondFactorArea?: PolicyArea
  }
}

/**
 * Never gated, named by the routes' registered patterns: leaving (log-out, and deleting the account: nobody must enrol in order to go),
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

/**
 * The area of a page route, from what it was added with: its config, else 'exempt' for
 * the patterns above, else 'console' (every other page, so that a new page is gated by default).
 */
export function policyAreaOfRoute(route: { url: string; config?: { secondFactorArea?: PolicyArea } }): PolicyArea {
  const declared = route.config?.secondFactorArea
  if (declared !== undefined) return declared
  return EXEMPT.some((prefix) => under(route.url, prefix)) ? 'exempt' : 'console'
}

const WHY: Record<EnrolmentDemand, string> = {
  operator: 'This server asks every operator to set up a second factor before using the admin pages.',
  developer: 'This server asks every developer to set up a second factor before registering or managing applications.',
  everyone: 'This server asks every account to set up a second factor before going on.',
}

/** The same, to an account that has a second factor but a session that did not use it. */
const WHY_USE: Record<EnrolmentDemand, string> = {
  operator: 'This server asks every operator to use a second factor before using the admin pages.',
  developer: 'This server asks every developer to use a second factor before registering or managing applications.',
  everyone: 'This server asks every account to use a second factor before going on.',
}

/** Whether an authorize query asks for prompt=none (any other prompt may show the page). */
function silentPrompt(query: unknown): boolean {
  const prompt = (query as Record<string, unknown> | undefined)?.prompt
  return typeof prompt === 'string' && prompt.split(' ').includes('none')
}

/**
 * The hook: a logged-in user the policy asks to enrol first gets a page saying so (403), with the
 * ways to enrol, whatever the method; nothing behind it runs. A preHandler hook of the pages'
 * context, so it runs before the hooks of every group of pages inside it (the admin pages'
 * operator check among them) and before each route's own checks; the session is resolved
 * before, in onRequest (registerSession). The area is the route's (`policyAreaOfRoute`), worked
 * out at its first request and kept with its config; the not-found handler has none.
 */
export function registerSecondFactorPolicy(app: FastifyInstance, deps: Pick<Services, 'config'>): void {
  if (deps.config.requireSecondFactor === 'none') return
  const areas = new WeakMap<object, PolicyArea>()
  const areaOf = (request: FastifyRequest): PolicyArea => {
    const route = request.routeOptions
    let area = areas.get(route.config)
    if (area === undefined) areas.set(route.config, (area = policyAreaOfRoute({ url: route.url ?? '', config: route.config })))
    return area
  }
  app.addHook('preHandler', async function secondFactorGate(request, reply) {
    if (request.is404) return
    const area = areaOf(request)
    if (area !== 'exempt') await enrolFirst(request, reply, deps, area)
  })
}

/**
 * The policy's page for this request's user in the route's `area`, when it asks them to enrol
 * first; false when the request may go on. The hook's check, and GET /oauth/authorize's after it
 * reads a cached session again (src/http/routes/oauth/authorize.ts).
 */
export async function enrolFirst(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: Pick<Services, 'config'>,
  area: PolicyArea,
): Promise<boolean> {
  const policy = deps.config.requireSecondFactor
  // Most requests stop here: the authorize request's remembered consent is a hot path
  // (docs/decisions/007-one-statement-hot-paths.md).
  if (policy === 'none' || request.user === null || usedSecondFactor(request.user)) return false
  const demand = enrolmentDemand(policy, request.user, area)
  if (demand === undefined) return false
  // prompt=none never shows a page: the authorize request answers interaction_required itself.
  if (area === 'authorize' && request.method === 'GET' && silentPrompt(request.query)) return false
  // An account with a factor whose session was opened without it: log in again with it, or confirm
  // with it at /reauth (docs/decisions/012-reauthentication-and-policy.md).
  const useIt = request.user.secondFactor
  const title = useIt ? 'Use your second factor first' : 'Set up a second factor first'
  const next = request.method === 'GET' ? safeNextPath(request.url) : undefined
  const reauth = next === undefined ? '/reauth' : `/reauth?next=${encodeURIComponent(next)}`
  await render(request, reply, 'account/enrol-first.eta', { title, why: (useIt ? WHY_USE : WHY)[demand], useIt, reauth }, 403)
  return true
}
