import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose'
import { describe, expect, it } from 'vitest'
import { DpopProofError, accessTokenHash, checkDpopProof, normalizeHtu } from '../src/dpop.js'

const NOW = 1_800_000_000
const URL_ = 'https://api.example.com/things'

async function keyPair(alg = 'ES256') {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  return { privateKey, jwk: await exportJWK(publicKey), privateJwk: await exportJWK(privateKey) }
}

async function proof(
  key: Awaited<ReturnType<typeof keyPair>>,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  alg = 'ES256',
): Promise<string> {
  return new SignJWT({ jti: crypto.randomUUID(), htm: 'GET', htu: URL_, iat: NOW, ...claims })
    .setProtectedHeader({ alg, typ: 'dpop+jwt', jwk: key.jwk, ...header })
    .sign(key.privateKey)
}

describe('checkDpopProof (RFC 9449 §4.3)', () => {
  it('accepts a well-formed proof and gives the key thumbprint, jti and nonce', async () => {
    const key = await keyPair()
    const checked = await checkDpopProof(await proof(key, { nonce: 'n-1' }), { method: 'GET', url: `${URL_}?q=1#f`, now: NOW })
    expect(checked.jkt).toBe(await calculateJwkThumbprint(key.jwk, 'sha256'))
    expect(checked.nonce).toBe('n-1')
    expect(checked.iat).toBe(NOW)
  })

  it('accepts EdDSA and RSA-PSS keys', async () => {
    for (const alg of ['EdDSA', 'PS256']) {
      const key = await keyPair(alg)
      await expect(checkDpopProof(await proof(key, {}, {}, alg), { method: 'GET', url: URL_, now: NOW })).resolves.toBeDefined()
    }
  })

  const refusals: [string, (key: Awaited<ReturnType<typeof keyPair>>) => Promise<string>, RegExp][] = [
    ['another method', (k) => proof(k, { htm: 'POST' }), /htm/],
    ['another URL', (k) => proof(k, { htu: 'https://api.example.com/other' }), /htu/],
    ['another host', (k) => proof(k, { htu: 'https://evil.example/things' }), /htu/],
    ['an iat too old', (k) => proof(k, { iat: NOW - 61 }), /iat/],
    ['an iat in the future', (k) => proof(k, { iat: NOW + 61 }), /iat/],
    ['no jti', (k) => proof(k, { jti: undefined }), /jti/],
    ['another typ', (k) => proof(k, {}, { typ: 'JWT' }), /typ/],
    ['a private key in jwk', (k) => proof(k, {}, { jwk: k.privateJwk }), /public key/],
  ]
  for (const [name, make, message] of refusals) {
    it(`refuses ${name}`, async () => {
      const key = await keyPair()
      await expect(checkDpopProof(await make(key), { method: 'GET', url: URL_, now: NOW })).rejects.toThrow(message)
    })
  }

  it('refuses a proof signed by a key other than its jwk', async () => {
    const [key, other] = [await keyPair(), await keyPair()]
    const forged = await proof({ ...other, jwk: key.jwk })
    await expect(checkDpopProof(forged, { method: 'GET', url: URL_, now: NOW })).rejects.toBeInstanceOf(DpopProofError)
  })

  it('refuses a MAC and garbage', async () => {
    const secret = new TextEncoder().encode('0123456789abcdef0123456789abcdef')
    const mac = await new SignJWT({ jti: 'x', htm: 'GET', htu: URL_, iat: NOW })
      .setProtectedHeader({ alg: 'HS256', typ: 'dpop+jwt', jwk: { kty: 'oct' } })
      .sign(secret)
    await expect(checkDpopProof(mac, { method: 'GET', url: URL_, now: NOW })).rejects.toThrow(/alg/)
    await expect(checkDpopProof('not.a.jwt', { method: 'GET', url: URL_, now: NOW })).rejects.toBeInstanceOf(DpopProofError)
    await expect(checkDpopProof('x'.repeat(9000), { method: 'GET', url: URL_, now: NOW })).rejects.toThrow(/too long/)
  })

  it('checks ath against the presented token at a resource server', async () => {
    const key = await keyPair()
    const token = 'gh_at_example'
    const good = await proof(key, { ath: accessTokenHash(token) })
    await expect(checkDpopProof(good, { method: 'GET', url: URL_, now: NOW, accessToken: token })).resolves.toBeDefined()
    await expect(checkDpopProof(good, { method: 'GET', url: URL_, now: NOW, accessToken: 'another' })).rejects.toThrow(/ath/)
    await expect(checkDpopProof(await proof(key), { method: 'GET', url: URL_, now: NOW, accessToken: token })).rejects.toThrow(/ath/)
  })

  it('normalises htu as RFC 3986 §6.2.2-6.2.3 say', () => {
    expect(normalizeHtu('HTTPS://API.Example.com:443/things?x#y')).toBe('https://api.example.com/things')
    expect(normalizeHtu('http://h:80/a/./b/../c')).toBe('http://h/a/c')
    expect(normalizeHtu('not a url')).toBeUndefined()
  })
})
