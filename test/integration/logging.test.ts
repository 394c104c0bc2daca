import { Writable } from 'node:stream'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { redactUrl } from '../../src/lib/log-options.js'
import { manualClock } from '../../src/lib/clock.js'
import { type Services, createServices } from '../../src/services.js'
import { TEST_SECRET_KEY, buildTestApp } from '../helpers/app.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { createTestDatabase, type TestDatabase } from '../helpers/db.js'
import { Mailbox } from '../helpers/mailbox.js'

let lines: string[] = []
let testDb: TestDatabase
let app: Awaited<ReturnType<typeof buildApp>>
let services: Services

beforeAll(async () => {
  testDb = await createTestDatabase()
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  services = await createServices(loadConfig({ LOG_LEVEL: 'trace', SECRET_KEY: TEST_SECRET_KEY }), {
    database: testDb.handle,
    clock: manualClock(),
    logStream: stream,
    mailer: new Mailbox(),
  })
  app = await buildApp(services)
})
afterAll(async () => {
  await app.close()
  await services.close()
  await testDb.destroy()
})

it('redacts secret query parameters from URLs', () => {
  expect(redactUrl('/oauth/token?client_id=a&client_secret=gcs_x&code=c1&redirect_uri=r')).toBe(
    '/oauth/token?client_id=a&client_secret=[REDACTED]&code=[REDACTED]&redirect_uri=r',
  )
  expect(redactUrl('/x?access_token=t&token=u&password=p')).toBe('/x?access_token=[REDACTED]&token=[REDACTED]&password=[REDACTED]')
  // The device flow (RFC 8628): the user code of verification_uri_complete, and a device code sent in a query.
  expect(redactUrl('/device?user_code=BCDF-GHJK')).toBe('/device?user_code=[REDACTED]')
  expect(redactUrl('/oauth/token?device_code=gdc_x&grant_type=g')).toBe('/oauth/token?device_code=[REDACTED]&grant_type=g')
  expect(redactUrl('/login?next=%2Fdevice%3Fuser_code%3DBCDF-GHJK')).toBe('/login?next=%2Fdevice%3Fuser_code%3D%5BREDACTED%5D')
})

it('redacts the secrets of the path in `next`, where a mailed link sends the browser to log in first', () => {
  expect(redactUrl('/login?next=%2Fconfirm-email%3Ftoken%3Dgce_secret')).toBe('/login?next=%2Fconfirm-email%3Ftoken%3D%5BREDACTED%5D')
  expect(redactUrl('/login?next=%2Faccount%2Ftwo-factor')).toBe('/login?next=%2Faccount%2Ftwo-factor')
  expect(redactUrl('/login?next=%E0%A4%A')).toBe('/login?next=[REDACTED]')
})

it('redacts by the parameter name a parser would see: decoded, in any case, after any separator', () => {
  for (const [url, redacted] of [
    // Fastify decodes query keys: client%5Fsecret IS client_secret to the token endpoint.
    ['/oauth/token?client%5Fsecret=gcs_x&client_id=a', '/oauth/token?client%5Fsecret=[REDACTED]&client_id=a'],
    ['/oauth/token?%63%6F%64%65=c1', '/oauth/token?%63%6F%64%65=[REDACTED]'],
    // Encoded twice, for a proxy that decodes once more.
    ['/oauth/token?client%255Fsecret=gcs_x', '/oauth/token?client%255Fsecret=[REDACTED]'],
    // Not a parameter Gatehouse reads, but plainly a secret.
    ['/oauth/token?Client_Secret=gcs_x&CODE=c1', '/oauth/token?Client_Secret=[REDACTED]&CODE=[REDACTED]'],
    // `+` is a space in a query; the surrounding spaces do not make another name.
    ['/oauth/token?client_secret+=gcs_x&+token=t', '/oauth/token?client_secret+=[REDACTED]&+token=[REDACTED]'],
    // `;` and `#` separate pairs for some parsers.
    ['/cb?x=1;code=c1', '/cb?x=1;code=[REDACTED]'],
    ['/cb?x=1#access_token=t&state=s', '/cb?x=1#access_token=[REDACTED]&state=[REDACTED]'],
    // Malformed percent-encoding is not an error, and other parameters keep their spelling.
    ['/x?%E0%A4%A=1&password=p&redirect_uri=https%3A%2F%2Fa%2Fcb', '/x?%E0%A4%A=1&password=[REDACTED]&redirect_uri=https%3A%2F%2Fa%2Fcb'],
    ['/x?code', '/x?code'],
    ['/no-query', '/no-query'],
  ]) {
    expect(redactUrl(url!)).toBe(redacted)
  }
})

it('never logs a secret sent under an encoded or differently cased name', async () => {
  lines = []
  for (const query of ['client%5Fsecret=gcs_encoded', 'Client_Secret=gcs_cased', 'client_id=a;code=gac_semicolon']) {
    await app.inject({ method: 'POST', url: `/oauth/token?${query}`, headers: { 'content-length': '0' } })
  }
  const all = lines.join('')
  expect(all).toContain('/oauth/token?')
  for (const secret of ['gcs_encoded', 'gcs_cased', 'gac_semicolon']) expect(all).not.toContain(secret)
})

it('never logs the OpenID Connect hints or a pushed request_uri, at the authorization endpoint or at sign-out', async () => {
  lines = []
  const hints = {
    login_hint: 'hinted.person@example.com',
    id_token_hint: 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJoaW50ZWQtc3ViIn0.c2lnbmVk',
    logout_hint: 'logout-hint-value',
    request_uri: 'urn:ietf:params:oauth:request_uri:pushed-reference-value',
  }
  await app.inject(`/oauth/authorize?${new URLSearchParams({ client_id: 'x', response_type: 'code', ...hints })}`)
  await app.inject(`/oauth/logout?${new URLSearchParams({ id_token_hint: hints.id_token_hint, logout_hint: hints.logout_hint })}`)
  const all = lines.join('')
  expect(all).toContain('/oauth/authorize?client_id=x')
  expect(all).toContain('/oauth/logout?')
  for (const value of ['hinted.person', 'eyJhbGciOiJSUzI1NiJ9', 'logout-hint-value', 'pushed-reference-value']) {
    expect(all).not.toContain(value)
  }
})

it("generates the request id itself and ignores a client's X-Request-Id without TRUST_PROXY", async () => {
  lines = []
  const res = await app.inject({ url: '/healthz', headers: { 'x-request-id': 'chosen-by-client' } })
  const id = String(res.headers['x-request-id'])
  expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  const logged = lines.map((l) => JSON.parse(l) as { reqId?: string })
  expect(logged.some((l) => l.reqId === id)).toBe(true)
  expect(lines.join('')).not.toContain('chosen-by-client')
})

it("writes Fastify's two request lines at info and below, the second once the response is finished", async () => {
  lines = []
  const id = String((await app.inject('/healthz')).headers['x-request-id'])
  const messages = () => lines.map((l) => JSON.parse(l) as { reqId?: string; msg?: string }).filter((l) => l.reqId === id)
  await expect.poll(() => messages().map((l) => l.msg)).toEqual(['incoming request', 'request completed'])
})

it("above info writes a request's own lines with its id and none of Fastify's request lines", async () => {
  const written: string[] = []
  const quiet = await createServices(loadConfig({ LOG_LEVEL: 'warn', SECRET_KEY: TEST_SECRET_KEY }), {
    database: testDb.handle,
    clock: manualClock(),
    logStream: new Writable({
      write(chunk, _enc, done) {
        written.push(String(chunk))
        done()
      },
    }),
    mailer: new Mailbox(),
  })
  const quietApp = await buildApp(quiet)
  // Outside the pages: request.log and reply.log are Fastify's child of the process's logger.
  quietApp.get('/log-probe', (request, reply) => {
    request.log.warn('probe request line')
    reply.log.error('probe reply line')
    return 'ok'
  })
  try {
    expect((await quietApp.inject('/healthz')).statusCode).toBe(200)
    const probed = await quietApp.inject('/log-probe')
    expect(probed.statusCode).toBe(200)
    const refused = await quietApp.inject({
      method: 'POST',
      url: '/login',
      headers: { origin: 'https://elsewhere.example', 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'email=quiet%40example.com&password=x',
    })
    expect(refused.statusCode).toBe(403)
    const requestLines = written.map((l) => JSON.parse(l) as { reqId?: string; msg?: string; level?: number }).filter((l) => 'reqId' in l)
    expect(requestLines).toEqual([
      expect.objectContaining({ level: 40, reqId: probed.headers['x-request-id'], msg: 'probe request line' }),
      expect.objectContaining({ level: 50, reqId: probed.headers['x-request-id'], msg: 'probe reply line' }),
      expect.objectContaining({ level: 40, reqId: refused.headers['x-request-id'], msg: 'cross-origin request refused' }),
    ])
  } finally {
    await quietApp.close()
    await quiet.close()
  }
})

it("uses a trusted proxy's X-Request-Id when it is sane, and a fresh id when it is not", async () => {
  const proxied = await buildTestApp({ TRUST_PROXY: '127.0.0.1' }, testDb)
  try {
    const idFor = async (value: string) =>
      String((await proxied.app.inject({ url: '/healthz', headers: { 'x-request-id': value } })).headers['x-request-id'])
    expect(await idFor('f2c1a7e0-proxy')).toBe('f2c1a7e0-proxy')
    expect(await idFor('Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1')).toBe('Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1')
    expect(await idFor('x'.repeat(128))).toBe('x'.repeat(128))
    for (const insane of ['x'.repeat(129), 'two words', 'tab\there', 'caf\u00e9', '']) {
      const id = await idFor(insane)
      expect(id).not.toBe(insane)
      expect(id).toMatch(/^[0-9a-f-]{36}$/)
    }
  } finally {
    await proxied.close()
  }
})

it('takes X-Request-Id only from a listed proxy, not from any peer once TRUST_PROXY is set', async () => {
  const proxied = await buildTestApp({ TRUST_PROXY: '10.0.0.5,fd00::/8' }, testDb)
  try {
    const idFrom = async (remoteAddress: string) =>
      String(
        (await proxied.app.inject({ url: '/healthz', remoteAddress, headers: { 'x-request-id': 'proxy-chosen' } })).headers['x-request-id'],
      )
    expect(await idFrom('10.0.0.5')).toBe('proxy-chosen')
    expect(await idFrom('fd00::17')).toBe('proxy-chosen')
    expect(await idFrom('203.0.113.9')).toMatch(/^[0-9a-f-]{36}$/)
    expect(await idFrom('127.0.0.1')).toMatch(/^[0-9a-f-]{36}$/)
  } finally {
    await proxied.close()
  }
})

it('logs JSON lines with a request id and never a password, cookie or secret', async () => {
  lines = []
  const session = new BrowserSession(app)
  await session.signUpAndLogIn('logs@example.com', 'very-secret-password')
  await app.inject({
    method: 'POST',
    url: '/oauth/token?client_secret=gcs_leak&code=gac_leak',
    headers: { authorization: 'Basic bGVhazpsZWFr', 'content-length': '0' },
  })
  await session.get('/?token=gat_leak')
  const all = lines.join('')
  expect(lines.length).toBeGreaterThan(5)
  for (const line of lines) expect(JSON.parse(line)).toHaveProperty('reqId')
  for (const secret of [
    'very-secret-password',
    'gcs_leak',
    'gac_leak',
    'gat_leak',
    'bGVhazpsZWFr',
    session.cookies.get('gatehouse_session')!,
  ]) {
    expect(all).not.toContain(secret)
  }
})
