/*
 * REQUIRE_TWO_FACTOR (docs/accounts.md "Who must enrol", docs/decisions/012-reauthentication-and-policy.md):
 * who must have a second factor (a TOTP secret or a passkey) before using what. One pure decision,
 * applied to every page request by one hook (src/http/second-factor-gate.ts).
 */

/** From the least to the most demanding; `operators` is the default. */
export const SECOND_FACTOR_POLICIES = ['none', 'operators', 'developers', 'all'] as const

export type SecondFactorPolicy = (typeof SECOND_FACTOR_POLICIES)[number]

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
  /** Whether the account has a second factor. */
  readonly secondFactor: boolean
  /** RFC 8176 methods the session proved: its log-in's, and a factor proven since (src/accounts/sessions/sessions.ts). */
  readonly amr: readonly string[]
}

/**
 * Whether the session itself used a second factor of the account: `mfa` among its methods (a log-in
 * with one, a passkey sign-in, or one proven since: enrolling it, or "Confirm it's you" with a code),
 * while the account still has one. An account's factor does not make a session opened with the
 * password alone any stronger (docs/decisions/012-reauthentication-and-policy.md).
 */
export function usedSecondFactor(user: PolicySubject): boolean {
  return user.secondFactor && user.amr.includes('mfa')
}

/**
 * Whether `user` must set up a second factor (or, when the account has one, use it in this session)
 * before reaching `area`, and why; undefined when they may go on. Nobody logged in, and a session
 * that used the account's second factor, always go on: the pages
 * themselves decide who may see them (the admin pages answer 404 to anyone but an operator, so
 * the policy speaks to operators only there and never advertises the pages).
 */
export function enrolmentDemand(policy: SecondFactorPolicy, user: PolicySubject | null, area: PolicyArea): EnrolmentDemand | undefined {
  if (user === null || usedSecondFactor(user) || area === 'exempt' || policy === 'none') return undefined
  if (area === 'admin') return user.is_operator ? 'operator' : undefined
  if (policy === 'all') return 'everyone'
  if (area === 'applications' && policy === 'developers') return 'developer'
  return undefined
}
