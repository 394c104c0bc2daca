import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCli } from '../../../src/cli/run.js'
import type { Config } from '../../../src/config.js'
import { createMailer } from '../../../src/mail/mailer.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { createAccessToken, createApplication, createUser } from '../../helpers/factories.js'
import { type CliResult, runCliOn } from '../../helpers/cli.js'

/*
 * The command line's commands, run in this process against the test database (the built
 * binary as a child process: cli-process.test.ts).
 */

let t: TestContext

beforeAll(async () => {
  t = await buildTestApp()
})
afterAll(async () => {
  await t.close()
})

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  return cliWith(t.config, argv)
}

function cliWith(config: Config, argv: string[]): Promise<CliResult> {
  return runCliOn(t, argv, { config })
}

/** The events the command line recorded in the audit log, oldest first. */
async function recorded(): Promise<{ event: string; detail: string; user_id: string | null }[]> {
  return t.db.selectFrom('audit_events').select(['event', 'detail', 'user_id']).orderBy('occurred_at').orderBy('id').execute()
}

const row = (table: 'users' | 'applications', id: string) => t.db.selectFrom(table).selectAll().where('id', '=', id).executeTakeFirst()

describe('usage', () => {
  it('prints the commands for --help (0) and for nothing at all (1)', async () => {
    expect(await cli('--help')).toMatchObject({ code: 0, out: expect.stringContaining('admin add <email>') })
    expect(await cli()).toMatchObject({ code: 1, out: expect.stringContaining('tokens revoke --app') })
  })

  it('refuses unknown commands, options and arguments in one line', async () => {
    for (const argv of [['frobnicate'], ['users', 'list', '--colour'], ['admin', 'add'], ['apps', 'resource-server', 'x', 'maybe']]) {
      const { code, err, out } = await cli(...argv)
      expect(code, argv.join(' ')).toBe(1)
      expect(err.split('\n'), err).toHaveLength(1)
      expect(err).toMatch(/^gatehouse: /)
      expect(err).not.toMatch(/\n\s+at /)
      expect(out).toBe('')
    }
  })

  it("folds a failure worded over several lines (a driver's error) onto the one line", async () => {
    const err: string[] = []
    const code = await runCli(
      ['users', 'list'],
      { open: () => Promise.reject(new Error('connect failed\n  at 127.0.0.1:5432\n')), mail: t.config.mail },
      { out: () => {}, err: (s) => err.push(s) },
    )
    expect({ code, err }).toEqual({ code: 1, err: ['gatehouse: connect failed at 127.0.0.1:5432'] })
  })
})

describe('admin', () => {
  it('makes a user an operator and back, and lists operators', async () => {
    const user = await createUser(t.db, { email: 'ops@example.com', emailVerified: true })
    expect(await cli('admin', 'add', 'OPS@example.com')).toMatchObject({ code: 0, out: 'ops@example.com is now an operator.' })
    expect((await row('users', user.id))?.is_operator).toBe(true)
    expect((await cli('admin', 'add', 'ops@example.com')).out).toBe('ops@example.com is already an operator.')
    const list = await cli('admin', 'list', '--json')
    expect(JSON.parse(list.out)).toEqual([expect.objectContaining({ email: 'ops@example.com' })])
    expect((await cli('admin', 'list')).out).toMatch(/^EMAIL\s+CREATED\s+SUSPENDED\nops@example\.com\s/)
    expect(await cli('admin', 'remove', 'ops@example.com', '--json')).toMatchObject({ code: 0 })
    expect((await row('users', user.id))?.is_operator).toBe(false)
    expect((await cli('admin', 'remove', 'ops@example.com')).out).toBe('ops@example.com is not an operator.')
    expect((await recorded()).map((e) => e.event)).toEqual(expect.arrayContaining(['operator.added', 'operator.removed']))
    // No actor and no address: the detail says where the action came from.
    expect((await recorded()).find((e) => e.event === 'operator.added')?.detail).toBe('From the command line')
  })

  it('refuses an account whose address was never verified, in one line, and changes nothing', async () => {
    // Anyone may sign up first with the operator's address (docs/operating/admin.md "The first operator").
    const squatter = await createUser(t.db, { email: 'squatted-ops@example.com' })
    const refused = await cli('admin', 'add', 'squatted-ops@example.com')
    expect(refused).toMatchObject({ code: 1, out: '' })
    expect(refused.err).toMatch(/^gatehouse: squatted-ops@example\.com has not verified its address .*verification mail.*$/)
    expect(refused.err.split('\n')).toHaveLength(1)
    expect((await row('users', squatter.id))?.is_operator).toBe(false)
    expect((await recorded()).filter((e) => e.user_id === squatter.id)).toEqual([])
  })

  it('answers an unknown email with exit code 1 and one line', async () => {
    expect(await cli('admin', 'add', 'nobody@example.com')).toEqual({
      code: 1,
      out: '',
      err: 'gatehouse: No user has the email nobody@example.com.',
    })
  })
})

describe('users', () => {
  it('lists, searches and shows users', async () => {
    const user = await createUser(t.db, { email: 'listed-user@example.com' })
    await createApplication(t.db, { ownerId: user.id, name: 'Listed app' })
    const found = JSON.parse((await cli('users', 'list', '--search', 'LISTED-user', '--json')).out)
    expect(found).toEqual([
      expect.objectContaining({ email: 'listed-user@example.com', applications: 1, operator: false, suspended: null }),
    ])
    expect(JSON.parse((await cli('users', 'list', '--search', 'no-such-text', '--json')).out)).toEqual([])
    expect((await cli('users', 'list', '--page', '0')).code).toBe(1)
    const shown = await cli('users', 'show', 'listed-user@example.com')
    expect(shown.out).toContain(`id:`)
    expect(shown.out).toContain(user.id)
    expect(shown.out).toMatch(/^email_verified: +no$/m)
    expect(JSON.parse((await cli('users', 'show', 'listed-user@example.com', '--json')).out)).toMatchObject({
      email_verified: false,
      email_verified_at: null,
    })
    const verifiedAt = new Date('2026-01-02T03:04:05.000Z')
    await t.db.updateTable('users').set({ email_verified_at: verifiedAt }).where('id', '=', user.id).execute()
    expect((await cli('users', 'show', 'listed-user@example.com')).out).toMatch(/^email_verified: +yes, 2026-01-02T03:04:05\.000Z$/m)
    expect(JSON.parse((await cli('users', 'show', 'listed-user@example.com', '--json')).out)).toMatchObject({
      email_verified: true,
      email_verified_at: verifiedAt.toISOString(),
    })
  })

  it('suspends (ending sessions, revoking tokens, suspending applications), unsuspends and deletes', async () => {
    const user = await createUser(t.db, { email: 'suspended-user@example.com' })
    const own = await createApplication(t.db, { ownerId: user.id })
    const other = await createApplication(t.db)
    const token = await createAccessToken(t.db, { userId: user.id, applicationId: other.id })
    await t.db
      .insertInto('sessions')
      .values({ id_hash: 'h'.repeat(64), user_id: user.id, created_at: new Date(), expires_at: new Date(Date.now() + 3600_000) })
      .execute()

    expect((await cli('users', 'suspend', 'suspended-user@example.com')).code).toBe(0)
    expect((await row('users', user.id))?.suspended_at).not.toBeNull()
    expect((await row('applications', own.id))?.suspended_at).not.toBeNull()
    const revoked = await t.db
      .selectFrom('access_tokens')
      .select('revoked_at')
      .where('token_hash', '=', token.digest)
      .executeTakeFirstOrThrow()
    expect(revoked.revoked_at).not.toBeNull()
    expect(await t.db.selectFrom('sessions').select('id_hash').where('user_id', '=', user.id).execute()).toEqual([])
    expect((await cli('users', 'suspend', 'suspended-user@example.com')).out).toContain('already suspended')

    expect((await cli('users', 'unsuspend', 'suspended-user@example.com')).code).toBe(0)
    expect((await row('users', user.id))?.suspended_at).toBeNull()
    expect((await row('applications', own.id))?.suspended_at).toBeNull()

    const deleted = await cli('users', 'delete', 'suspended-user@example.com', '--json')
    expect(JSON.parse(deleted.out)).toEqual({ ok: true, email: 'suspended-user@example.com', applications: 1 })
    expect(await row('users', user.id)).toBeUndefined()
    expect(await row('applications', own.id)).toBeUndefined()
    expect((await cli('users', 'show', 'suspended-user@example.com')).code).toBe(1)
  })
})

describe('apps', () => {
  it('lists by name, client_id or owner, and shows one', async () => {
    const owner = await createUser(t.db, { email: 'app-owner@example.com' })
    const app = await createApplication(t.db, { ownerId: owner.id, name: 'Findable Planner' })
    await t.db
      .updateTable('applications')
      .set({ post_logout_redirect_uris: ['https://planner.example/signed-out'] })
      .where('id', '=', app.id)
      .execute()
    for (const query of ['findable', app.clientId, 'app-owner@']) {
      const rows = JSON.parse((await cli('apps', 'list', '--search', query, '--json')).out)
      expect(
        rows.map((r: { client_id: string }) => r.client_id),
        query,
      ).toContain(app.clientId)
    }
    const shown = JSON.parse((await cli('apps', 'show', app.clientId, '--json')).out)
    expect(shown).toMatchObject({
      client_id: app.clientId,
      name: 'Findable Planner',
      owner: 'app-owner@example.com',
      resource_server: false,
      post_logout_redirect_uris: ['https://planner.example/signed-out'],
    })
    expect(await cli('apps', 'show', 'no-such-client')).toEqual({
      code: 1,
      out: '',
      err: 'gatehouse: No application has the client_id no-such-client.',
    })
  })

  it('finds an application whose client_id begins with "-" (issued before ids stopped doing so) after "--" or "="', async () => {
    const app = await createApplication(t.db, { name: 'Dashed Planner' })
    const clientId = `-${app.clientId.slice(1)}`
    await t.db.updateTable('applications').set({ client_id: clientId }).where('id', '=', app.id).execute()
    expect(JSON.parse((await cli('apps', 'show', '--json', '--', clientId)).out)).toMatchObject({ client_id: clientId })
    const found = JSON.parse((await cli('apps', 'list', `--search=${clientId}`, '--json')).out)
    expect(found.map((r: { client_id: string }) => r.client_id)).toEqual([clientId])
    // Without them, one line that says how.
    for (const argv of [
      ['apps', 'show', clientId],
      ['apps', 'list', '--search', clientId],
    ]) {
      const { code, out, err } = await cli(...argv)
      expect({ code, out }).toEqual({ code: 1, out: '' })
      expect(err.split('\n'), err).toHaveLength(1)
      expect(err).toMatch(/--search=-XYZ|after '--'/)
    }
  })

  it('suspends, verifies, marks as resource server and deletes', async () => {
    const app = await createApplication(t.db)
    const user = await createUser(t.db)
    const token = await createAccessToken(t.db, { userId: user.id, applicationId: app.id })

    await createAccessToken(t.db, { userId: user.id, applicationId: app.id })
    // --json reports the count, as `tokens revoke --json` does.
    const suspended = await cli('apps', 'suspend', app.clientId, '--json')
    expect(suspended.err).toBe('')
    expect(JSON.parse(suspended.out)).toEqual({
      ok: true,
      client_id: app.clientId,
      changed: true,
      revoked: 2,
    })
    expect(JSON.parse((await cli('apps', 'suspend', app.clientId, '--json')).out)).toMatchObject({ changed: false, revoked: 0 })
    expect((await row('applications', app.id))?.suspended_at).not.toBeNull()
    expect(
      (await t.db.selectFrom('access_tokens').select('revoked_at').where('token_hash', '=', token.digest).executeTakeFirstOrThrow())
        .revoked_at,
    ).not.toBeNull()
    expect((await cli('apps', 'unsuspend', app.clientId)).code).toBe(0)
    expect((await row('applications', app.id))?.suspended_at).toBeNull()

    expect((await cli('apps', 'verify', app.clientId)).out).toContain('is now verified')
    expect((await row('applications', app.id))?.verified_at).not.toBeNull()
    expect((await cli('apps', 'unverify', app.clientId)).out).toBe(`Test application (${app.clientId}) is no longer verified.`)
    expect((await row('applications', app.id))?.verified_at).toBeNull()
    expect((await cli('apps', 'unverify', app.clientId)).out).toBe(`Test application (${app.clientId}) is not verified.`)

    expect(JSON.parse((await cli('apps', 'resource-server', app.clientId, 'on', '--json')).out)).toMatchObject({
      resource_server: true,
      changed: true,
    })
    expect((await row('applications', app.id))?.is_resource_server).toBe(true)
    expect((await cli('apps', 'resource-server', app.clientId, 'off')).code).toBe(0)
    expect((await row('applications', app.id))?.is_resource_server).toBe(false)

    expect((await cli('apps', 'delete', app.clientId)).code).toBe(0)
    expect(await row('applications', app.id)).toBeUndefined()
    expect((await recorded()).map((e) => e.event)).toEqual(
      expect.arrayContaining([
        'operator.application_suspended',
        'operator.application_unsuspended',
        'operator.application_verified',
        'operator.application_unverified',
        'operator.resource_server_on',
        'operator.resource_server_off',
        'operator.application_deleted',
      ]),
    )
  })
})

describe('tokens revoke', () => {
  it("revokes an application's tokens, or one user's", async () => {
    const app = await createApplication(t.db)
    const [alice, bob] = [await createUser(t.db), await createUser(t.db)]
    const a = await createAccessToken(t.db, { userId: alice.id, applicationId: app.id })
    const b = await createAccessToken(t.db, { userId: bob.id, applicationId: app.id })
    const live = async (digest: string) =>
      (await t.db.selectFrom('access_tokens').select('revoked_at').where('token_hash', '=', digest).executeTakeFirstOrThrow())
        .revoked_at === null

    expect(await cli('tokens', 'revoke', '--app', app.clientId, '--user', alice.email)).toMatchObject({
      code: 0,
      out: expect.stringContaining('1 tokens'),
    })
    expect(await live(a.digest)).toBe(false)
    expect(await live(b.digest)).toBe(true)
    expect(JSON.parse((await cli('tokens', 'revoke', '--app', app.clientId, '--json')).out)).toMatchObject({ revoked: 1 })
    expect(await live(b.digest)).toBe(false)
    expect((await cli('tokens', 'revoke')).code).toBe(1)
    expect((await cli('tokens', 'revoke', '--app', app.clientId, '--user', 'ghost@example.com')).err).toBe(
      'gatehouse: No user has the email ghost@example.com.',
    )
  })
})

describe('maintenance', () => {
  it('migrates and runs the janitor once', async () => {
    expect(await cli('migrate')).toMatchObject({ code: 0, out: 'The database is up to date.' })
    const janitor = await cli('janitor', '--json')
    expect(janitor.code).toBe(0)
    expect(JSON.parse(janitor.out)).toMatchObject({ ok: true, ran: true })
  })
})

describe('outbox', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-outbox-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  const config = (): Config => ({ ...t.config, mail: { ...t.config.mail, smtpUrl: undefined, outboxDir: dir } })
  const token = `gev_${'A1b2-C3d4_'.repeat(4)}xyz`
  const link = `http://127.0.0.1:3000/verify-email?token=${token}`

  // Written by the server's own outbox mailer; each file then gets a name a second apart, so
  // "newest" does not depend on how fast this test runs.
  async function write(n: number, to: string, text: string): Promise<string> {
    const mailer = createMailer(config().mail, { info() {}, error() {} })
    expect(await mailer.send({ to, subject: `Mail ${n} · Gatehouse`, text, html: `<p>${text}</p>` })).toBe(true)
    const fresh = readdirSync(dir).find((f) => !f.startsWith('2000-'))!
    const name = `2000-01-01T00-00-0${n}-000Z-0000000${n}.eml`
    renameSync(join(dir, fresh), join(dir, name))
    return name
  }

  it('says so when there is no mail, and refuses to read it when mail goes to SMTP', async () => {
    expect(await cliWith(config(), ['outbox'])).toEqual({ code: 0, out: `No mail in ${dir}.`, err: '' })
    const smtp = { ...config(), mail: { ...config().mail, smtpUrl: 'smtp://mail.example.com' } }
    expect(await cliWith(smtp, ['outbox'])).toMatchObject({ code: 1, err: expect.stringMatching(/^gatehouse: SMTP_URL is set/) })
  })

  it('prints the newest mails decoded, with links that work as printed', async () => {
    const first = await write(1, 'first@example.com', `Hello.\n\nVerify your address:\n${link}\n\nIf it was not you, ignore this mail.`)
    await write(2, 'second@example.com', 'No link here, but an equals sign: a=b, and ünïcode.')
    const third = await write(3, 'first@example.com', `Reset your password:\n${link.replace('verify-email', 'reset-password')}`)
    // What the grep of old read: quoted-printable, "=" as "=3D".
    expect(readFileSync(join(dir, first), 'utf8')).toContain('token=3Dgev_')

    const all = await cliWith(config(), ['outbox'])
    expect(all.code).toBe(0)
    expect(all.out.indexOf('Mail 3')).toBeLessThan(all.out.indexOf('Mail 2'))
    expect(all.out.indexOf('Mail 2')).toBeLessThan(all.out.indexOf('Mail 1'))
    expect(all.out).toContain('a=b, and ünïcode.')
    expect(all.out.split('\n')).toContain(`  ${link}`)
    expect(all.out).not.toContain('=3D')

    const last = await cliWith(config(), ['outbox', '--to', 'FIRST@example.com', '--last'])
    expect(last.out.split('\n')[0]).toBe(third)
    expect(last.out).not.toContain('Mail 1')
    const json = JSON.parse((await cliWith(config(), ['outbox', '--to', 'first@example.com', '--json'])).out)
    expect(json).toEqual([
      expect.objectContaining({ file: third, to: 'first@example.com', links: [link.replace('verify-email', 'reset-password')] }),
      expect.objectContaining({ file: first, subject: 'Mail 1 · Gatehouse', links: [link] }),
    ])
    expect(json[1].text).toContain('If it was not you, ignore this mail.')
    expect((await cliWith(config(), ['outbox', '--to', 'nobody@example.com'])).out).toBe(`No mail to nobody@example.com in ${dir}.`)
  })

  it('refuses arguments it does not take', async () => {
    expect(await cliWith(config(), ['outbox', 'extra'])).toMatchObject({
      code: 1,
      err: expect.stringMatching(/^gatehouse: unexpected argument extra/),
    })
  })
})
