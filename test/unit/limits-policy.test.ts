import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { LIFETIMES, QUOTAS, RATE_LIMITS, RETENTION, rateRule } from '../../src/limits/policy.js'

describe('the limits policy (src/limits/policy.ts)', () => {
  it('keeps rate-limit counters past the longest window, so the janitor never resets a counter in use', () => {
    const longest = Math.max(...Object.values(RATE_LIMITS).map((l) => l.windowMs))
    expect(RETENTION.rate_limits).toBeGreaterThanOrEqual(longest)
  })

  it('builds a rule from the setting the limit names, under its key prefix', () => {
    const settings = { ...loadConfig({ LOGIN_FAILURE_LIMIT: '7', SIGNUP_LIMIT: '3' }).limits, clientAuthFailures: 9 }
    expect(rateRule(RATE_LIMITS.loginDevice, 'n1', settings)).toEqual({ key: 'login:device:n1', limit: 7, windowMs: 15 * 60_000 })
    expect(rateRule(RATE_LIMITS.signup, '192.0.2.1', settings)).toEqual({ key: 'signup:addr:192.0.2.1', limit: 3, windowMs: 3600_000 })
    expect(rateRule(RATE_LIMITS.clientAuthentication, 'app', settings).limit).toBe(9)
  })

  it('names, for each configurable limit, a variable the configuration reads', () => {
    const envs = [...Object.values(RATE_LIMITS), ...Object.values(QUOTAS)].flatMap((l) => ('env' in l ? [l.env] : []))
    for (const env of envs) {
      // An invalid value for a variable the schema knows is refused with its name.
      expect(() => loadConfig({ [env]: '-1' }), env).toThrow(env)
    }
  })

  it('names, for each configurable quota and lifetime, a field of the configuration that holds a number', () => {
    const config = loadConfig({}) as unknown as Record<string, unknown>
    const fieldOf = (path: string) => path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], config)
    const settings = [...Object.values(QUOTAS), LIFETIMES.session].flatMap((q) => ('setting' in q ? [q.setting] : []))
    expect(settings.length).toBe(7)
    for (const setting of settings) expect(typeof fieldOf(setting), setting).toBe('number')
  })
})
