import { Writable } from 'node:stream'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { redactUrl } from '../../src/http/logging.js'
import { manualClock } from '../../src/lib/clock.js'
import { type Services, createServices } from '../../src/services.js'
import { BrowserSession } from '../helpers/browser-session.js'
import { createTestDatabase, type TestDatabase } from '../helpers/db.js'

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
  services = await createServices(loadConfig({ LOG_LEVEL: 'trace' }), { database: testDb.handle, clock: manualClock(), logStream: stream })
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
