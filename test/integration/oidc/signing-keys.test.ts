import { type JSONWebKeySet, createLocalJWKSet, jwtVerify } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ROTATION_DELAY_MS } from '../../../src/oauth/identity/signing-keys.js'
import { createServices } from '../../../src/services.js'
import { type TestContext, buildTestApp } from '../../helpers/app.js'
import { type CliResult, runCliOn } from '../../helpers/cli.js'

/*
 * The ID Token signing keys (docs/decisions/014-signing-keys.md): made at first need,
 * once across processes; private parts sealed; `gatehouse keys rotate` publishes the next key
 * before it signs; the janitor deletes a retired key once every ID Token it signed has expired.
 */

let t: TestContext
let rotatedAt: number

beforeAll(async () => {
  t = await buildTestApp({ ID_TOKEN_TTL: '600' })
})
afterAll(async () => {
  await t.close()
})

function cli(...argv: string[]): Promise<CliResult> {
  return runCliOn(t, argv)
}

const keyIds = async () => (await t.db.selectFrom('signing_keys').select('kid').orderBy('created_at').execute()).map((r) => r.kid)

describe('signing keys', () => {
  it('are made once at first need, even by two processes at once, with the private part sealed', async () => {
    const other = await createServices(t.config, { role: 'cli', database: t.testDb.handle, clock: t.clock })
    const [a, b] = await Promise.all([
      t.deps.identity.signIdToken('RS256', { sub: 'x' }),
      other.identity.signIdToken('RS256', { sub: 'y' }),
    ])
    await other.close()
    expect(await keyIds()).toHaveLength(1)
    const header = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()) as { kid: string }
    expect(header(a).kid).toBe(header(b).kid)
    const row = await t.db.selectFrom('signing_keys').selectAll().executeTakeFirstOrThrow()
    expect(row.private_jwk_sealed).toMatch(/^v1\./)
    expect(row.public_jwk).not.toContain('"d"')
  })

  it('are listed and rotated by the command line: the next key is published before it signs', async () => {
    const [first] = await keyIds()
    const listed = await cli('keys', 'list', '--json')
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.out)).toEqual([expect.objectContaining({ kid: first, alg: 'RS256', retired: null })])

    rotatedAt = t.clock().getTime()
    const rotated = await cli('keys', 'rotate')
    expect(rotated.code).toBe(0)
    expect(rotated.out).toContain('is published now')
    const [, next] = await keyIds()
    // Every process reads the keys again within a minute.
    t.clock.advance(60_000)
    const published = await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })
    expect((published.json() as { keys: { kid: string }[] }).keys.map((k) => k.kid)).toEqual([first, next])

    // An ID Token signed before the rotation still verifies against the JWKS after it.
    const before = await t.deps.identity.signIdToken('RS256', {
      sub: 'before',
      iss: 'x',
      exp: Math.floor(t.clock().getTime() / 1000) + 3600,
    })
    const jwks = createLocalJWKSet(published.json() as JSONWebKeySet)
    expect((await jwtVerify(before, jwks, { currentDate: t.clock() })).payload.sub).toBe('before')

    // Until the delay has passed, the previous key signs.
    const kidOf = (jwt: string) => (JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()) as { kid: string }).kid
    expect(kidOf(await t.deps.identity.signIdToken('RS256', { sub: 'x' }))).toBe(first)
    t.clock.set(new Date(rotatedAt + ROTATION_DELAY_MS))
    expect((await jwtVerify(before, jwks, { currentDate: t.clock() })).payload.sub).toBe('before')
    expect(kidOf(await t.deps.identity.signIdToken('RS256', { sub: 'x' }))).toBe(next)

    const events = await t.db.selectFrom('audit_events').select(['event', 'detail']).execute()
    expect(events).toContainEqual({ event: 'operator.signing_keys_rotated', detail: expect.stringContaining(next!) })
  })

  it('keeps the previous key published for ID_TOKEN_TTL after it stopped signing, then the janitor deletes it', async () => {
    const [first, next] = await keyIds()
    t.clock.set(new Date(rotatedAt + ROTATION_DELAY_MS + 600_000 - 1000))
    await t.deps.janitor.runOnce()
    expect(await keyIds()).toEqual([first, next])
    t.clock.set(new Date(rotatedAt + ROTATION_DELAY_MS + 600_000 + 60_000))
    await t.deps.janitor.runOnce()
    expect(await keyIds()).toEqual([next])
    const published = await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })
    expect((published.json() as { keys: { kid: string }[] }).keys.map((k) => k.kid)).toEqual([next])
  })
})
