import { expect, it } from 'vitest'
import { buildTestApp } from '../../helpers/app.js'
import { BrowserSession } from '../../helpers/browser-session.js'
import { testAppFile } from '../../helpers/file-set-up.js'

const { t } = testAppFile()

it('serves health and readiness', async () => {
  expect((await t.app.inject('/healthz')).json()).toEqual({ status: 'ok' })
  expect((await t.app.inject('/readyz')).statusCode).toBe(200)
})

it('signs up and logs in', async () => {
  const s = await new BrowserSession(t.app).signUpAndLogIn('smoke@example.com')
  const res = await s.get('/')
  expect(res.statusCode).toBe(303)
  expect(res.headers.location).toBe('/applications')
})

it('exposes Prometheus metrics by route pattern, never by raw URL', async () => {
  await t.app.inject('/login?next=%2Fapplications&password=hunter2')
  const res = await t.app.inject('/metrics')
  expect(res.statusCode).toBe(200)
  expect(res.body).toMatch(/gatehouse_http_requests_total\{method="GET",route="\/login",status="200"\} \d+/)
  expect(res.body).not.toContain('hunter2')
  expect(res.body).toContain('process_cpu_user_seconds_total')
})

it('counts each answer once, under its route pattern, or as unmatched when no route has its address', async () => {
  const counted = async (method: string, route: string, status: number): Promise<number> => {
    const body = (await t.app.inject('/metrics')).body
    const line = `gatehouse_http_requests_total{method="${method}",route="${route}",status="${status}"} `
    const at = body.indexOf(line)
    return at === -1 ? 0 : Number(body.slice(at + line.length, body.indexOf('\n', at)))
  }
  const before = {
    login: await counted('GET', '/login', 200),
    head: await counted('HEAD', '/login', 200),
    tokenInfo: await counted('GET', '/oauth/token/info', 401),
    unmatched: await counted('GET', 'unmatched', 404),
    application: await counted('GET', '/applications/:id', 303),
  }
  await t.app.inject('/login')
  await t.app.inject('/login')
  await t.app.inject({ method: 'HEAD', url: '/login' })
  await t.app.inject('/oauth/token/info')
  await t.app.inject('/no-such-page-7f3a')
  await t.app.inject('/oauth/no-such-endpoint')
  await t.app.inject('/applications/7f3a')
  expect(await counted('GET', '/login', 200)).toBe(before.login + 2)
  expect(await counted('HEAD', '/login', 200)).toBe(before.head + 1)
  expect(await counted('GET', '/oauth/token/info', 401)).toBe(before.tokenInfo + 1)
  expect(await counted('GET', 'unmatched', 404)).toBe(before.unmatched + 2)
  expect(await counted('GET', '/applications/:id', 303)).toBe(before.application + 1)
  expect((await t.app.inject('/metrics')).body).not.toContain('7f3a')
})

it('sends the security headers on pages, and only the cheap ones on the JSON API', async () => {
  const page = await t.app.inject('/login')
  expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'")
  // The log-in page runs the passkey scripts only (test/integration/account/passkeys.test.ts); other pages none.
  expect(page.headers['content-security-policy']).toMatch(
    /script-src http:\/\/gatehouse\.test\/static\/webauthn-browser\.js http:\/\/gatehouse\.test\/static\/passkeys\.js(;|$)/,
  )
  expect((await t.app.inject('/signup')).headers['content-security-policy']).toContain("script-src 'none'")
  // PUBLIC_URL is http here: there is no https to upgrade to.
  expect(page.headers['content-security-policy']).not.toContain('upgrade-insecure-requests')
  expect(page.headers['x-frame-options']).toBe('DENY')
  expect(page.headers['referrer-policy']).toBe('same-origin')
  expect(page.headers['x-content-type-options']).toBe('nosniff')
  expect(page.headers['cache-control']).toBe('no-store')

  const api = await t.app.inject({ method: 'POST', url: '/oauth/introspect', payload: {} })
  expect(api.headers['x-content-type-options']).toBe('nosniff')
  expect(api.headers['x-request-id']).toBeTruthy()
  expect(api.headers['content-security-policy']).toBeUndefined()
})

it('marks the session and CSRF cookies Secure (and __Host-, cookies.test.ts) when the public URL is https', async () => {
  const https = await buildTestApp({ PUBLIC_URL: 'https://auth.example.com' })
  try {
    const s = new BrowserSession(https.app)
    await s.get('/signup')
    await s.post('/signup', { email: 'secure@example.com', password: 'correct horse battery' })
    await s.get('/login')
    const res = await s.post('/login', { email: 'secure@example.com', password: 'correct horse battery' })
    expect(res.statusCode).toBe(303)
    const cookies = res.cookies as Array<{ name: string; secure?: boolean; httpOnly?: boolean }>
    expect(cookies.find((c) => c.name === '__Host-gatehouse_session')).toMatchObject({ secure: true, httpOnly: true })
    const page = await https.app.inject('/login')
    expect((page.cookies as Array<{ name: string; secure?: boolean }>).find((c) => c.name === '__Host-gatehouse_csrf')).toMatchObject({
      secure: true,
    })
    expect(page.headers['strict-transport-security']).toBeDefined()
  } finally {
    await https.close()
  }
})
