import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Verifier, createVerifier } from '@gatehouse/verifier'
import { basicAuth, createAccessToken } from '../../helpers/factories.js'
import { listenOnFreePort } from '../../helpers/app.js'
import { resourceServerTestFile } from '../../helpers/file-set-up.js'

/*
 * An expiring access token (docs/expiring-tokens.md) ends at one instant for everyone who judges
 * it: Gatehouse's introspection (RFC 7662 §2.2 `active`) and token info, and the verifier in both
 * modes, each by the same injected clock. A second before `exp` all accept; at `exp` all refuse,
 * the verifiers' cached answers included (their entries never outlive the token).
 */

const { t, user, app, rs } = resourceServerTestFile({ resourceServerName: 'Expiry resource server' })

const verifiers: Record<string, Verifier> = {}

beforeAll(async () => {
  const base = await listenOnFreePort(t)
  const now = () => t.clock().getTime()
  verifiers.database = createVerifier({ mode: 'database', database: t.deps.bus.verifierDatabase(t.deps.database), now })
  verifiers.introspection = createVerifier({
    mode: 'introspection',
    introspectionUrl: `${base}/oauth/introspect`,
    revocationStreamUrl: `${base}/oauth/revocations/stream`,
    clientId: rs.clientId,
    clientSecret: rs.clientSecret,
    now,
  })
  await Promise.all(Object.values(verifiers).map((v) => v.ready()))
})
afterAll(async () => {
  await Promise.all(Object.values(verifiers).map((v) => v.close()))
})

async function judgements(token: string) {
  const introspected = await t.app.inject({
    method: 'POST',
    url: '/oauth/introspect',
    headers: { authorization: basicAuth(rs.clientId, rs.clientSecret), 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token }).toString(),
  })
  const info = await t.app.inject({ method: 'GET', url: '/oauth/token/info', headers: { authorization: `Bearer ${token}` } })
  return {
    introspection: introspected.json<{ active: boolean }>().active,
    tokenInfo: info.statusCode === 200,
    databaseVerifier: (await verifiers.database!.verify(`Bearer ${token}`)).ok,
    introspectionVerifier: (await verifiers.introspection!.verify(`Bearer ${token}`)).ok,
  }
}

describe('an expiring token ends at the same instant for the server and the verifier', () => {
  it('is valid everywhere a second before exp and nowhere at exp, cached answers included', async () => {
    const expiresAt = new Date(Math.floor(t.clock().getTime() / 1000) * 1000 + 60_000)
    const tok = await createAccessToken(t.db, { userId: user.id, applicationId: app.id, scopes: ['read'], expiresAt })
    const all = (value: boolean) => ({ introspection: value, tokenInfo: value, databaseVerifier: value, introspectionVerifier: value })

    expect(await judgements(tok.token)).toEqual(all(true))
    t.clock.set(new Date(expiresAt.getTime() - 1_000))
    expect(await judgements(tok.token)).toEqual(all(true))
    t.clock.set(expiresAt)
    expect(await judgements(tok.token)).toEqual(all(false))
  })
})
