/*
 * REQUIRE_TWO_FACTOR (README "Who must enrol", docs/decisions/012-reauthentication-and-policy.md):
 * who must have a second factor (a TOTP secret or a passkey) before using what. One pure decision,
 * applied to every page request by one hook (src/http/two-factor-gate.ts).
 */

/** From the least to the most demanding; `operators` is the default. */
export const TWO_FACTOR_POLICIES = ['none', 'operators', 'developers', 'all'] as const

export type TwoFactorPolicy = (typeof TWO_FACTOR_POLICIES)[number]

/**
 * What a page request reaches, as the policy sees it: the admin pages; registering and managing
 * applications; the OAuth consent flow; any other console page; and the pages a user needs to
 * enrol, to leave, or to prove their address (never gated, or nobody could comply).
 */
export type PolicyArea = 'admin' | 'applications' | 'authorize' | 'console' | 'exempt'

/** Why a user must enrol first: the role the policy asks it of. */
export type EnrolmentDemand = 'operator' | 'developer' | 'everyone'

/** What the policy reads of the logged-in user (src/repositories/sessions.ts SessionUser). */
export interface PolicySubject {
  readonly is_operator: boolean
  readonly secondFactor: boolean
}

/**
 * Whether `user` must set up a second factor before reaching `area`, and why; undefined when they
 * may go on. Nobody logged in, and an account with a second factor, always go on: the pages
 * themselves decide who may see them (the admin pages answer 404 to anyone but an operator, so
 * the policy speaks to operators only there and never advertises the pages).
 */
export function enrolmentDemand(policy: TwoFactorPolicy, user: PolicySubject | null, area: PolicyArea): EnrolmentDemand | undefined {
  if (user === null || user.secondFactor || area === 'exempt' || policy === 'none') return undefined
  if (area === 'admin') return user.is_operator ? 'operator' : undefined
  if (policy === 'all') return 'everyone'
  if (area === 'applications' && policy === 'developers') return 'developer'
  return undefined
}
