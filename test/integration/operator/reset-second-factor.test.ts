import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { refreshSecondFactor } from '../../../src/repositories/second-factor.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { expectAccessiblePage } from '../../helpers/console.js'
import { createAccessToken, createApplication, createUser } from '../../helpers/factories.js'
import { loggedInUser } from '../oauth/helpers.js'
import { userIdOf } from './helpers.js'
import { type CliResult, runCliOn } from '../../helpers/cli.js'

/*
 * The operator's reset of a user's second factor (docs/accounts.md "Account recovery"): from the
 * admin user page, through its confirmation, and from the command line. The user's TOTP secret,
 * passkeys, recovery codes, enrolment and pending log-ins go, their sessions end, and nothing
 * they granted is revoked; an audit event and a mail say so.
 */

let t: TestContext

beforeAll(async () => {
  t = await buildTestApp()
})
afterAll(async () => {
  await t.close()
})

/** A user with every kind of second-factor row, logged in, with a grant and a live token. */
async function enrolledUser() {
  const s = await loggedInUser(t.app)
  const userId = await userIdOf(t, s.email)
  const now = new Date()
  const later = new Date(now.getTime() + 600_000)
  await t.db.insertInto('totp_secrets').values({ user_id: userId, secret_sealed: 'sealed', last_step: 0, created_at: now }).execute()
  await t.db.insertInto('totp_enrolments').values({ user_id: userId, secret_sealed: 'sealed', expires_at: later }).execute()
  await t.db
    .insertInto('recovery_codes')
    .values(['a', 'b', 'c'].map((c) => ({ user_id: userId, code_hash: sha256Hex(`${userId}${c}`), created_at: now })))
    .execute()
  for (const n of [1, 2]) {
    await t.db
      .insertInto('passkeys')
      .values({
        id: `cred-${n}-${userId}`,
        user_id: userId,
        public_key: Buffer.from('k'),
        counter: 0,
        name: `Key ${n}`,
        backed_up: false,
        created_at: now,
      })
      .execute()
  }
  await t.db
    .insertInto('pending_logins')
    .values({ id_hash: sha256Hex(`pending-${userId}`), user_id: userId, created_at: now, expires_at: later })
    .execute()
  await refreshSecondFactor(t.db, userId)
  const app = await createApplication(t.db)
  await t.db
    .insertInto('grants')
    .values({ user_id: userId, application_id: app.id, scopes: ['read'], created_at: now, updated_at: now })
    .execute()
  const token = await createAccessToken(t.db, { userId, applicationId: app.id })
  return { s, userId, token }
}

async function rowsOf(userId: string): Promise<Record<string, number>> {
  const count = async (
    table: 'totp_secrets' | 'totp_enrolments' | 'recovery_codes' | 'passkeys' | 'pending_logins' | 'sessions' | 'grants',
  ) => (await t.db.selectFrom(table).select('user_id').where('user_id', '=', userId).execute()).length
  const tables = ['totp_secrets', 'totp_enrolments', 'recovery_codes', 'passkeys', 'pending_logins', 'sessions', 'grants'] as const
  return Object.fromEntries(await Promise.all(tables.map(async (table) => [table, await count(table)])))
}

async function expectReset(userId: string, token: { digest: string }) {
  expect(await rowsOf(userId)).toEqual({
    totp_secrets: 0,
    totp_enrolments: 0,
    recovery_codes: 0,
    passkeys: 0,
    pending_logins: 0,
    sessions: 0,
    grants: 1,
  })
  const user = await t.db.selectFrom('users').select('second_factor').where('id', '=', userId).executeTakeFirstOrThrow()
  expect(user.second_factor).toBe(false)
  const row = await t.db.selectFrom('access_tokens').select('revoked_at').where('token_hash', '=', token.digest).executeTakeFirstOrThrow()
  expect(row.revoked_at).toBeNull()
}

async function operatorSession() {
  const op = await loggedInUser(t.app)
  await t.db.updateTable('users').set({ is_operator: true }).where('email', '=', op.email).execute()
  return op
}

describe('the admin pages', () => {
  it('show each user’s verification and second-factor state, and the kinds of factor on the user page', async () => {
    const op = await operatorSession()
    const { s, userId } = await enrolledUser()
    const plain = await createUser(t.db, { emailVerified: false })
    const list = await op.get(`/admin/users?q=${encodeURIComponent(s.email)}`)
    expect(list.body).toContain('<th scope="col">Second factor</th>')
    expect(list.body).toMatch(/Verified<\/td>\s*<td>Enrolled<\/td>/)
    const plainList = await op.get(`/admin/users?q=${encodeURIComponent(plain.email)}`)
    expect(plainList.body).toMatch(/Not verified<\/td>\s*<td>None<\/td>/)
    const page = await op.get(`/admin/users/${userId}`)
    expect(page.body).toContain('Enrolled: authenticator app yes, 2 passkeys, 3 recovery codes left')
    expect(page.body).toContain(`href="/admin/users/${userId}/reset-second-factor"`)
    expectAccessiblePage(page.body)
    const plainPage = await op.get(`/admin/users/${plain.id}`)
    expect(plainPage.body).toMatch(/<dt>Second factor<\/dt>\s*<dd>None<\/dd>/)
    expect(plainPage.body).not.toContain('reset-second-factor')
  })

  it('reset through the confirmation: factors and sessions gone, grants and tokens kept, audited, mailed', async () => {
    const op = await operatorSession()
    const opId = await userIdOf(t, op.email)
    const { s, userId, token } = await enrolledUser()
    const confirm = await op.get(`/admin/users/${userId}/reset-second-factor`)
    expect(confirm.statusCode).toBe(200)
    expect(confirm.body).toContain(`Reset the second factor of ${s.email}?`)
    expect(confirm.body).toContain(
      'The access they gave to applications and their tokens are kept, but the refresh tokens approved in the sessions that end stop working',
    )
    expectAccessiblePage(confirm.body)
    const forged = await op.post(`/admin/users/${userId}/reset-second-factor`, { _csrf: 'forged' })
    expect(forged.statusCode).toBe(403)
    expect((await rowsOf(userId)).passkeys).toBe(2)

    const res = await op.post(`/admin/users/${userId}/reset-second-factor`, {})
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`/admin/users/${userId}?done=second-factor-reset`)
    expect((await op.get(String(res.headers.location))).body).toContain('The second factor is removed')
    await expectReset(userId, token)
    // The user's browser is logged out: they log in again with the password alone.
    expect((await s.get('/applications')).headers.location).toBe('/login?next=%2Fapplications')

    const events = await t.db
      .selectFrom('audit_events')
      .select(['actor_id', 'detail'])
      .where('user_id', '=', userId)
      .where('event', '=', 'operator.second_factor_reset')
      .execute()
    expect(events).toEqual([{ actor_id: opId, detail: '6 factors and codes removed, 1 sessions ended' }])
    const mail = t.mailbox.last(s.email)
    expect(mail.subject).toContain('Your second factor was reset')
    expect(mail.text).toContain('The access you gave to applications is unchanged.')
  })

  it('is not offered for the operator’s own account, and refused if forced', async () => {
    const op = await operatorSession()
    const opId = await userIdOf(t, op.email)
    await t.db.insertInto('totp_secrets').values({ user_id: opId, secret_sealed: 'x', last_step: 0, created_at: new Date() }).execute()
    await refreshSecondFactor(t.db, opId)
    const page = await op.get(`/admin/users/${opId}`)
    expect(page.body).not.toContain('reset-second-factor')
    expect((await op.get(`/admin/users/${opId}/reset-second-factor`)).statusCode).toBe(404)
    expect((await op.post(`/admin/users/${opId}/reset-second-factor`, {})).statusCode).toBe(404)
    expect((await rowsOf(opId)).totp_secrets).toBe(1)
  })

  it('needs a recent confirmation like every admin action', async () => {
    const op = await operatorSession()
    const { userId } = await enrolledUser()
    await op.get(`/admin/users/${userId}/reset-second-factor`)
    t.clock.advance(11 * 60_000)
    const res = await op.post(`/admin/users/${userId}/reset-second-factor`, {})
    expect(res.headers.location).toBe(`/reauth?next=${encodeURIComponent(`/admin/users/${userId}/reset-second-factor`)}`)
    expect((await rowsOf(userId)).passkeys).toBe(2)
  })
})

describe('gatehouse users reset-second-factor', () => {
  function cli(...argv: string[]): Promise<CliResult> {
    return runCliOn(t, argv, { mailer: t.mailbox })
  }

  it('resets as the page does, audited without an actor, and says what it did', async () => {
    const { s, userId, token } = await enrolledUser()
    const res = await cli('users', 'reset-second-factor', s.email)
    expect(res.code, res.err).toBe(0)
    expect(res.out).toContain(
      `${s.email} has no second factor now: 6 factors and recovery codes removed, 1 sessions ended with their refresh tokens, grants and other tokens kept`,
    )
    await expectReset(userId, token)
    const events = await t.db
      .selectFrom('audit_events')
      .select(['actor_id'])
      .where('user_id', '=', userId)
      .where('event', '=', 'operator.second_factor_reset')
      .execute()
    expect(events).toEqual([{ actor_id: null }])
    expect(t.mailbox.last(s.email).subject).toContain('Your second factor was reset')
    const json = await cli('users', 'reset-second-factor', s.email, '--json')
    expect(JSON.parse(json.out)).toMatchObject({ ok: true, email: s.email, factors: 0, ended_sessions: 0 })
  })

  it('exits 1 with one line for an unknown address', async () => {
    const res = await cli('users', 'reset-second-factor', 'nobody@example.com')
    expect(res.code).toBe(1)
    expect(res.err.split('\n')).toHaveLength(1)
    expect(res.err).toContain('No user has the email nobody@example.com.')
  })
})
