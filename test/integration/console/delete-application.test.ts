import { describe, expect, it } from 'vitest'
import { sha256Hex } from '../../../src/lib/crypto.js'
import { consoleTestFile, createApplicationViaConsole, expectAccessiblePage, storedApplication } from '../../helpers/console.js'

const { t, developer: alice } = consoleTestFile('alice@example.com')

describe('deleting an application', () => {
  it('asks first, then deletes it with its grants, codes and tokens', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Doomed' })
    const user = await t.db.selectFrom('users').select('id').where('email', '=', 'alice@example.com').executeTakeFirstOrThrow()
    const now = t.clock()
    await t.db
      .insertInto('grants')
      .values({ user_id: user.id, application_id: created.id, scopes: ['read'], created_at: now, updated_at: now })
      .execute()
    const code = await t.db
      .insertInto('authorization_codes')
      .values({
        code_hash: sha256Hex('code-doomed'),
        application_id: created.id,
        user_id: user.id,
        scopes: ['read'],
        redirect_uri: null,
        code_challenge: null,
        code_challenge_method: null,
        created_at: now,
        expires_at: new Date(now.getTime() + 600_000),
        consumed_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
    await t.db
      .insertInto('access_tokens')
      .values({
        token_hash: sha256Hex('token-doomed'),
        application_id: created.id,
        user_id: user.id,
        scopes: ['read'],
        authorization_code_id: code.id,
        created_at: now,
        revoked_at: null,
      })
      .execute()

    const confirm = await alice.get(`/applications/${created.id}/delete`)
    expect(confirm.statusCode).toBe(200)
    expectAccessiblePage(confirm.body)
    expect(confirm.body).toContain('<h1>Delete Doomed?</h1>')
    expect(confirm.body).toContain(`action="/applications/${created.id}/delete"`)
    expect(await storedApplication(t.db, created.id)).toBeDefined()

    const notices: string[] = []
    const unlisten = await t.testDb.handle.listen('gatehouse_revocations', (payload) => notices.push(payload))
    try {
      const res = await alice.post(`/applications/${created.id}/delete`, {})
      expect(res.statusCode).toBe(303)
      expect(res.headers.location).toBe('/applications?deleted=1')
      await expect.poll(() => notices).toContain(`app-deleted:${created.id}`)
    } finally {
      await unlisten()
    }

    expect(await storedApplication(t.db, created.id)).toBeUndefined()
    for (const table of ['grants', 'authorization_codes', 'access_tokens'] as const) {
      expect(await t.db.selectFrom(table).select('application_id').where('application_id', '=', created.id).execute()).toEqual([])
    }
    const list = await alice.get('/applications?deleted=1')
    expect(list.body).toContain('Application deleted.')
    expect(list.body).not.toContain(created.clientId)
    expect((await alice.get(`/applications/${created.id}`)).statusCode).toBe(404)
  })

  it('needs the CSRF token', async () => {
    const created = await createApplicationViaConsole(alice, { name: 'Kept' })
    await alice.get(`/applications/${created.id}/delete`)
    expect((await alice.post(`/applications/${created.id}/delete`, { _csrf: null })).statusCode).toBe(403)
    expect(await storedApplication(t.db, created.id)).toBeDefined()
  })
})
