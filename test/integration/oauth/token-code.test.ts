import { sha256Hex } from '../../../src/lib/crypto.js'
import { describe, expect, it } from 'vitest'
import { REVOCATION_CHANNEL } from '@gatehouse/verifier/shared'
import { CHALLENGE, VERIFIER, createClient, exchange, expectOAuthError, obtainCode, tokenRow } from './helpers.js'
import { tokenEndpointTestFile } from '../../helpers/oauth-set-up.js'

const { t, user: s, client } = tokenEndpointTestFile({ client: { redirectUris: ['https://client.example/cb'] } })

describe('redirect_uri (RFC 6749 4.1.3: identical to the authorization request)', () => {
  it('must repeat the sent value byte for byte', async () => {
    const sent = 'https://client.example/cb/deep?x=1'
    const code = await obtainCode(s, { ...client, redirectUri: sent })
    for (const variant of [
      'https://client.example/cb',
      'https://CLIENT.example/cb/deep?x=1',
      'https://client.example:443/cb/deep?x=1',
      `${sent}&y=2`,
    ]) {
      expectOAuthError(await exchange(t.app, client, { code, redirect_uri: variant }), 'invalid_grant')
    }
    expectOAuthError(await exchange(t.app, client, { code, redirect_uri: undefined }), 'invalid_grant')
    expect((await exchange(t.app, client, { code, redirect_uri: sent })).statusCode).toBe(200)
  })

  it('may be omitted, or be the registered URI, when the authorization request had none', async () => {
    const a = await obtainCode(s, client, { redirect_uri: undefined })
    expect((await exchange(t.app, client, { code: a, redirect_uri: client.redirectUri })).statusCode).toBe(200)
    const b = await obtainCode(s, client, { redirect_uri: undefined })
    expectOAuthError(await exchange(t.app, client, { code: b, redirect_uri: 'https://client.example/cb/other' }), 'invalid_grant')
  })
})

describe('PKCE (RFC 7636 4.6)', () => {
  it('checks an S256 verifier', async () => {
    const code = await obtainCode(s, client, { code_challenge: CHALLENGE, code_challenge_method: 'S256' })
    expectOAuthError(await exchange(t.app, client, { code }), 'invalid_grant')
    expectOAuthError(await exchange(t.app, client, { code, code_verifier: `${VERIFIER.slice(0, -1)}A` }), 'invalid_grant')
    expectOAuthError(await exchange(t.app, client, { code, code_verifier: 'short' }), 'invalid_request')
    expect((await exchange(t.app, client, { code, code_verifier: VERIFIER })).statusCode).toBe(200)
  })

  it('checks a plain verifier (method defaults to plain)', async () => {
    const code = await obtainCode(s, client, { code_challenge: VERIFIER })
    expectOAuthError(await exchange(t.app, client, { code, code_verifier: CHALLENGE }), 'invalid_grant')
    expect((await exchange(t.app, client, { code, code_verifier: VERIFIER })).statusCode).toBe(200)
  })

  it('refuses a verifier when the request had no challenge (RFC 9700 2.1.1)', async () => {
    const code = await obtainCode(s, client)
    expectOAuthError(await exchange(t.app, client, { code, code_verifier: VERIFIER }), 'invalid_grant')
  })
})

describe('code lifetime and binding', () => {
  it('expires after 10 minutes by the injected clock', async () => {
    const fresh = await obtainCode(s, client)
    t.clock.advance(10 * 60_000 - 1000)
    expect((await exchange(t.app, client, { code: fresh })).statusCode).toBe(200)
    const stale = await obtainCode(s, client)
    t.clock.advance(10 * 60_000)
    const res = await exchange(t.app, client, { code: stale })
    expectOAuthError(res, 'invalid_grant')
    expect(res.json().error_description).toMatch(/expired/)
  })

  it('is bound to its client: another client gets invalid_grant and the code stays usable', async () => {
    const other = await createClient(t.db, { redirectUris: [client.redirectUri] })
    const code = await obtainCode(s, client)
    expectOAuthError(await exchange(t.app, other, { code }), 'invalid_grant')
    expect((await exchange(t.app, client, { code })).statusCode).toBe(200)
  })

  it('refuses unknown and garbage codes', async () => {
    expectOAuthError(await exchange(t.app, client, { code: 'gac_nothing' }), 'invalid_grant')
    expectOAuthError(await exchange(t.app, client, { code: 'x'.repeat(5000) }), 'invalid_grant')
  })
})

describe('a code used twice (RFC 6749 4.1.2)', () => {
  it('fails with invalid_grant and revokes the token issued from it, announcing it on NOTIFY', async () => {
    const notices: string[] = []
    const stop = await t.testDb.handle.listen(REVOCATION_CHANNEL, (p) => notices.push(p))
    try {
      const code = await obtainCode(s, client)
      const first = await exchange(t.app, client, { code })
      const token = first.json().access_token as string
      expect((await tokenRow(t.db, token))?.revoked_at).toBeNull()
      const replay = await exchange(t.app, client, { code })
      expectOAuthError(replay, 'invalid_grant')
      expect((await tokenRow(t.db, token))?.revoked_at).toEqual(t.clock())
      await expect.poll(() => notices).toContain(sha256Hex(token))
      // Replaying once more changes nothing and stays an error.
      expectOAuthError(await exchange(t.app, client, { code }), 'invalid_grant')
    } finally {
      await stop()
    }
  })
})

describe('concurrent exchanges of one code', () => {
  it('give exactly one token out of 25', async () => {
    const code = await obtainCode(s, client)
    const results = await Promise.all(Array.from({ length: 25 }, () => exchange(t.app, client, { code })))
    const ok = results.filter((r) => r.statusCode === 200)
    expect(ok).toHaveLength(1)
    for (const r of results.filter((x) => x.statusCode !== 200)) expectOAuthError(r, 'invalid_grant')
    const rows = await t.db
      .selectFrom('access_tokens')
      .innerJoin('authorization_codes', 'authorization_codes.id', 'access_tokens.authorization_code_id')
      .select('access_tokens.token_hash')
      .where('authorization_codes.code_hash', '=', sha256Hex(code))
      .execute()
    expect(rows).toHaveLength(1)
  })
})
