import { describe, expect, it } from 'vitest'
import type { AuthorizationRequest } from '../../src/oauth/authorize/authorize-request.js'
import type { LogInDemand } from '../../src/oauth/authorize/login-demand.js'
import { checkHint, logInFor, sessionSuffices } from '../../src/oauth/authorize/authorize-session.js'
import type { IdTokenHint } from '../../src/oauth/identity/id-token-hint.js'

const NOW = new Date('2026-11-26T12:00:00Z')
const minutesAgo = (m: number) => new Date(NOW.getTime() - m * 60_000)

function request(logIn: Partial<LogInDemand>, idTokenHint?: string): AuthorizationRequest {
  return {
    application: { client_id: 'client-1' },
    logIn: { fresh: false, maxAgeSeconds: undefined, hint: undefined, askedAt: undefined, ...logIn },
    idTokenHint,
  } as unknown as AuthorizationRequest
}

describe('sessionSuffices (OpenID Connect Core 3.1.2.1)', () => {
  it('takes any session when the request asks for no recent log-in', () => {
    expect(sessionSuffices(request({}), { authenticatedAt: minutesAgo(600) }, NOW)).toBe(true)
  })

  it('takes a session no older than max_age seconds', () => {
    expect(sessionSuffices(request({ maxAgeSeconds: 300 }), { authenticatedAt: minutesAgo(5) }, NOW)).toBe(true)
    expect(sessionSuffices(request({ maxAgeSeconds: 300 }), { authenticatedAt: minutesAgo(6) }, NOW)).toBe(false)
  })

  it('wants a log-in after Gatehouse asked for one for prompt=login, and for max_age=0', () => {
    const askedAt = minutesAgo(1).getTime()
    expect(sessionSuffices(request({ fresh: true }), { authenticatedAt: NOW }, NOW)).toBe(false)
    expect(sessionSuffices(request({ fresh: true, askedAt }), { authenticatedAt: minutesAgo(2) }, NOW)).toBe(false)
    expect(sessionSuffices(request({ fresh: true, askedAt }), { authenticatedAt: NOW }, NOW)).toBe(true)
    expect(sessionSuffices(request({ maxAgeSeconds: 0, askedAt }), { authenticatedAt: NOW }, NOW)).toBe(true)
  })
})

describe('logInFor', () => {
  it('sends a plain log-in back to the request as it was, with the login_hint', () => {
    expect(logInFor(request({ hint: 'a@example.com' }), { client_id: 'client-1' }, NOW, true)).toEqual({
      kind: 'login',
      hint: 'a@example.com',
    })
  })

  it('marks when it asked, so the log-in that follows satisfies prompt=login or max_age', () => {
    const answer = logInFor(request({ fresh: true }), { client_id: 'client-1', prompt: 'login' }, NOW, true)
    expect(answer).toMatchObject({ kind: 'login', fresh: true })
    const back = new URLSearchParams(answer.returnTo!.slice('/oauth/authorize?'.length))
    expect(back.get('gatehouse_login_asked')).toBe(String(NOW.getTime()))
    expect(back.get('prompt')).toBe('login')
  })
})

describe('checkHint', () => {
  const hintFor = (sub: string, aud = 'client-1'): IdTokenHint => ({ sub, aud: [aud] }) as unknown as IdTokenHint
  const user = { id: 'user-1', authenticatedAt: minutesAgo(10) }

  it('refuses a hint Gatehouse did not sign, or signed for another client', async () => {
    expect(await checkHint(async () => undefined, request({}, 'x'), user)).toMatchObject({ kind: 'invalid' })
    expect(await checkHint(async () => hintFor('user-1', 'client-2'), request({}, 'x'), user)).toMatchObject({ kind: 'invalid' })
  })

  it("takes the session's own user, and asks another user's session to log in again", async () => {
    expect(await checkHint(async () => hintFor('user-1'), request({}, 'x'), user)).toMatchObject({ kind: 'ok' })
    const other = await checkHint(async () => hintFor('user-2'), request({}, 'x'), user)
    expect(other.kind).toBe('ok')
    expect(other.kind === 'ok' && other.request.logIn.fresh).toBe(true)
  })

  it('answers other-user when the log-in it asked for still did not bring the named user', async () => {
    const askedAt = minutesAgo(1).getTime()
    const loggedInAfter = { id: 'user-3', authenticatedAt: NOW }
    expect(await checkHint(async () => hintFor('user-2'), request({ askedAt }, 'x'), loggedInAfter)).toMatchObject({ kind: 'other-user' })
  })
})
