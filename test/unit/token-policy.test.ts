import { describe, expect, it } from 'vitest'
import {
  ACCESS_LIFETIMES,
  REFRESH_LIFETIMES,
  describeTokenPolicy,
  formatLifetime,
  parseTokenPolicyChoice,
  tokenPolicyFormValues,
} from '../../src/applications/token-policy.js'

/*
 * The token policy's presets and form (src/applications/token-policy.ts,
 * docs/decisions/022-bound-and-expiring-tokens.md).
 */

describe('the presets', () => {
  it("lie inside migration 0022's check, every refresh lifetime longer than every access lifetime", () => {
    for (const access of Object.values(ACCESS_LIFETIMES)) {
      expect(access).toBeGreaterThanOrEqual(60)
      expect(access).toBeLessThanOrEqual(604_800)
      for (const refresh of Object.values(REFRESH_LIFETIMES)) {
        expect(refresh).toBeGreaterThanOrEqual(3600)
        expect(refresh).toBeLessThanOrEqual(31_536_000)
        expect(refresh).toBeGreaterThan(access)
      }
    }
  })

  it('are named as people say them, and so is any lifetime an operator stored', () => {
    expect(Object.values(ACCESS_LIFETIMES).map(formatLifetime)).toEqual(['1 hour', '8 hours', '1 day'])
    expect(Object.values(REFRESH_LIFETIMES).map(formatLifetime)).toEqual(['30 days', '90 days', '180 days'])
    expect([60, 90, 5400, 7200].map(formatLifetime)).toEqual(['1 minute', '90 seconds', '90 minutes', '2 hours'])
  })
})

describe('the form', () => {
  it('reads the choices into the columns; until revoked is both lifetimes null', () => {
    expect(
      parseTokenPolicyChoice({ dpop: 'required', lifetime: 'expiring', access_lifetime: '24h', refresh_lifetime: '180d' }, 'web'),
    ).toMatchObject({
      ok: true,
      policy: { requireDpop: true, accessTokenTtlSeconds: 86_400, refreshTokenTtlSeconds: 180 * 86_400 },
    })
    expect(parseTokenPolicyChoice({ dpop: 'optional', lifetime: 'until-revoked', access_lifetime: '24h' }, 'web')).toMatchObject({
      ok: true,
      policy: { requireDpop: false, accessTokenTtlSeconds: null, refreshTokenTtlSeconds: null },
    })
  })

  it('gives a machine the first refresh preset whatever it sends (never used: RFC 6749 §4.4.3)', () => {
    expect(
      parseTokenPolicyChoice({ dpop: 'optional', lifetime: 'expiring', access_lifetime: '8h', refresh_lifetime: 'nonsense' }, 'machine'),
    ).toMatchObject({
      ok: true,
      policy: { accessTokenTtlSeconds: 8 * 3600, refreshTokenTtlSeconds: 30 * 86_400 },
    })
  })

  it('refuses what it does not offer, and anything that is not a body of strings', () => {
    for (const body of [
      null,
      'dpop=required',
      { dpop: 'required' },
      { dpop: 'REQUIRED', lifetime: 'until-revoked' },
      { dpop: 'optional', lifetime: 'expiring', access_lifetime: '3600' },
      { dpop: 'optional', lifetime: 'expiring', access_lifetime: 'toString' },
      { dpop: 'optional', lifetime: 'expiring', refresh_lifetime: '__proto__' },
      { dpop: ['optional'], lifetime: 'until-revoked' },
    ]) {
      expect(parseTokenPolicyChoice(body, 'web').ok, JSON.stringify(body)).toBe(false)
    }
  })

  it('prefills from the stored policy; a lifetime that is no preset shows the first', () => {
    expect(tokenPolicyFormValues({ requireDpop: true, accessTokenTtlSeconds: 8 * 3600, refreshTokenTtlSeconds: 90 * 86_400 })).toEqual({
      dpop: 'required',
      lifetime: 'expiring',
      accessLifetime: '8h',
      refreshLifetime: '90d',
    })
    expect(tokenPolicyFormValues({ requireDpop: false, accessTokenTtlSeconds: 600, refreshTokenTtlSeconds: 7200 })).toMatchObject({
      accessLifetime: '1h',
      refreshLifetime: '30d',
    })
  })
})

describe('the words', () => {
  it('say a machine never has refresh tokens, and the brief fits an audit detail', () => {
    const machine = describeTokenPolicy({ requireDpop: true, accessTokenTtlSeconds: 3600, refreshTokenTtlSeconds: 30 * 86_400 }, 'machine')
    expect(machine.brief).toBe('DPoP required, access tokens 1 hour')
    expect(machine.refreshTokens).toContain('RFC 6749 §4.4.3')
    const web = describeTokenPolicy({ requireDpop: false, accessTokenTtlSeconds: null, refreshTokenTtlSeconds: null }, 'web')
    expect(web.brief).toBe('DPoP optional, tokens valid until revoked')
  })
})
