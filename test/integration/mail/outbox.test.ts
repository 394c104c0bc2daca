import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { simpleParser } from 'mailparser'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { ensureBuilt } from '../../helpers/build.js'
import { type GatehouseProcess, startGatehouse } from '../../helpers/gatehouse-process.js'
import { pgliteDataDir } from '../../helpers/pglite-data-dir.js'
import { until } from '../../helpers/oauth-load.js'

/*
 * Outbox mode (docs/accounts.md "Mail"): Gatehouse started as `npm start` starts it, with no SMTP_URL,
 * writes each mail as an .eml file under DATA_DIR/outbox, and its log names the file, never the link.
 * DATA_DIR is a copy of a migrated one (test/helpers/pglite-data-dir.ts) with no outbox yet.
 */

let dataDir: string
let server: GatehouseProcess | undefined
beforeAll(async () => {
  await ensureBuilt()
  dataDir = await pgliteDataDir('migrated', 'gatehouse-outbox-')
}, 180_000)
afterAll(async () => {
  await server?.stop()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
})

it('writes the verification mail to DATA_DIR/outbox and logs its file name, not its link', async () => {
  server = await startGatehouse({ DATA_DIR: dataDir, LOG_LEVEL: 'info', SERVICE_NAME: 'Outbox Test' }, { built: true })
  const page = await fetch(`${server.url}/signup`)
  const cookie = (page.headers.getSetCookie() ?? []).map((c) => c.split(';')[0]).join('; ')
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!
  const res = await fetch(`${server.url}/signup`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, email: 'outbox@example.com', password: 'correct horse battery' }).toString(),
  })
  expect(res.status).toBe(303)
  expect(res.headers.get('location')).toBe('/login?signed_up=1&email=outbox%40example.com')

  const outbox = join(dataDir, 'outbox')
  const files = readdirSync(outbox)
  expect(files).toHaveLength(1)
  const file = files[0]!
  expect(file).toMatch(/\.eml$/)
  // Live links inside: readable by Gatehouse's user only.
  expect(statSync(join(outbox, file)).mode & 0o077).toBe(0)
  expect(statSync(outbox).mode & 0o077).toBe(0)

  const mail = await simpleParser(readFileSync(join(outbox, file)))
  expect(mail.subject).toBe('Verify your email address · Outbox Test')
  expect((mail.to as { text: string }).text).toBe('outbox@example.com')
  const link = /http:\/\/\S+\/verify-email\?token=gev_[A-Za-z0-9_-]{43}/.exec(mail.text ?? '')?.[0]
  expect(link?.startsWith(server.url)).toBe(true)
  // The link works: its page asks to confirm.
  expect((await fetch(link!)).status).toBe(200)

  // The request's log line may still be on its way through the pipe: wait for it to arrive (the
  // bound only names the failure; a loaded machine slows the pipe but cannot fail the test).
  await until(() => server!.stdout().includes('/verify-email?'), 20_000, 'the request’s log line', 20)
  const log = server.stdout()
  const line = log.split('\n').find((l) => l.includes('mail written to the outbox'))
  expect(line).toBeDefined()
  expect(JSON.parse(line!)).toMatchObject({ file, subject: 'Verify your email address · Outbox Test' })
  expect(log).not.toContain(new URL(link!).searchParams.get('token')!)
  expect(log).toContain('"url":"/verify-email?token=[REDACTED]"')
})
