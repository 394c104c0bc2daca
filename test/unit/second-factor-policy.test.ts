import { describe, expect, it } from 'vitest'
import { SECOND_FACTOR_POLICIES, type PolicyArea, enrolmentDemand, usedSecondFactor } from '../../src/accounts/second-factor/policy.js'
import { policyAreaOfRoute } from '../../src/http/second-factor-gate.js'

/* REQUIRE_TWO_FACTOR's one decision (docs/accounts.md "Who must enrol") and the areas of the pages. */

const AREAS: PolicyArea[] = ['admin', 'applications', 'authorize', 'console', 'exempt']
const operator = { is_operator: true, secondFactor: false, amr: ['pwd'] }
const developer = { is_operator: false, secondFactor: false, amr: ['pwd'] }
const MFA = ['pwd', 'otp', 'mfa']

describe('enrolmentDemand', () => {
  it('never stops a visitor without a session, a session that used the second factor, the exempt pages, or anyone under none', () => {
    for (const policy of SECOND_FACTOR_POLICIES) {
      for (const area of AREAS) {
        expect(enrolmentDemand(policy, null, area)).toBeUndefined()
        expect(enrolmentDemand(policy, { is_operator: true, secondFactor: true, amr: MFA }, area)).toBeUndefined()
        expect(enrolmentDemand(policy, { is_operator: false, secondFactor: true, amr: ['hwk', 'mfa'] }, area)).toBeUndefined()
      }
      expect(enrolmentDemand(policy, operator, 'exempt')).toBeUndefined()
    }
    for (const area of AREAS) expect(enrolmentDemand('none', operator, area)).toBeUndefined()
  })

  it('operators: only an operator, only on the admin pages', () => {
    expect(enrolmentDemand('operators', operator, 'admin')).toBe('operator')
    for (const area of ['applications', 'authorize', 'console'] as const)
      expect(enrolmentDemand('operators', operator, area)).toBeUndefined()
    for (const area of AREAS) expect(enrolmentDemand('operators', developer, area)).toBeUndefined()
  })

  it('developers: the admin pages for operators, and applications for everyone', () => {
    expect(enrolmentDemand('developers', operator, 'admin')).toBe('operator')
    expect(enrolmentDemand('developers', operator, 'applications')).toBe('developer')
    expect(enrolmentDemand('developers', developer, 'applications')).toBe('developer')
    for (const area of ['authorize', 'console'] as const) expect(enrolmentDemand('developers', developer, area)).toBeUndefined()
  })

  it('all: every page but the exempt ones; the admin pages still say nothing to non-operators (they answer 404)', () => {
    expect(enrolmentDemand('all', operator, 'admin')).toBe('operator')
    expect(enrolmentDemand('all', developer, 'admin')).toBeUndefined()
    for (const area of ['applications', 'authorize', 'console'] as const) expect(enrolmentDemand('all', developer, area)).toBe('everyone')
  })
})

describe("a session that did not use the account's second factor", () => {
  it('is stopped as an account without one: a factor enrolled after a password log-in, or one removed since a log-in with it', () => {
    for (const policy of ['operators', 'developers', 'all'] as const) {
      expect(enrolmentDemand(policy, { is_operator: true, secondFactor: true, amr: ['pwd'] }, 'admin')).toBe('operator')
      expect(enrolmentDemand(policy, { is_operator: true, secondFactor: false, amr: MFA }, 'admin')).toBe('operator')
      expect(enrolmentDemand(policy, { is_operator: true, secondFactor: true, amr: MFA }, 'admin')).toBeUndefined()
    }
    expect(usedSecondFactor({ is_operator: false, secondFactor: true, amr: ['pwd'] })).toBe(false)
    expect(usedSecondFactor({ is_operator: false, secondFactor: true, amr: ['pwd', 'hwk', 'mfa'] })).toBe(true)
  })
})

describe('policyAreaOfRoute', () => {
  it('takes the area the route declares in its config, whatever the pattern', () => {
    expect(policyAreaOfRoute({ url: '/admin/users/:id', config: { secondFactorArea: 'admin' } })).toBe('admin')
    expect(policyAreaOfRoute({ url: '/applications/:id', config: { secondFactorArea: 'applications' } })).toBe('applications')
    expect(policyAreaOfRoute({ url: '/oauth/authorize', config: { secondFactorArea: 'authorize' } })).toBe('authorize')
  })

  // Without a declared area: the exempt pages by their registered patterns, every other page the console.
  it.each([
    ['/admin', 'console'],
    ['/administrator', 'console'],
    ['/account', 'console'],
    ['/authorized-applications', 'console'],
    ['/', 'console'],
    ['/logout', 'exempt'],
    ['/oauth/logout', 'exempt'],
    ['/oauth/logout/confirm', 'exempt'],
    ['/account/delete', 'exempt'],
    ['/account/deleted', 'console'],
    ['/login', 'exempt'],
    ['/login/second-factor', 'exempt'],
    ['/account/two-factor', 'exempt'],
    ['/account/two-factor/totp/confirm', 'exempt'],
    ['/account/passkeys/:id/delete', 'exempt'],
    ['/account/passkeysx', 'console'],
    ['/reauth', 'exempt'],
    ['/verify-email', 'exempt'],
    ['/reset-password', 'exempt'],
    ['/confirm-email', 'exempt'],
    ['/cancel-email-change', 'exempt'],
  ])('%s is %s', (url, area) => {
    expect(policyAreaOfRoute({ url })).toBe(area)
  })
})
