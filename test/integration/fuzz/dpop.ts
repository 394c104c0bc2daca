import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import { SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose'
import { OWN_ORIGIN } from './harness.js'
import { headerText } from './wire.js'

/*
 * DPoP for the fuzz (RFC 9449, docs/dpop.md): proofs made before the run, since signing is
 * asynchronous and fast-check's arbitraries are not. Some are valid for the route (each then
 * replayed by later cases), some for another route or method, with a private key, a stale iat,
 * or `none`; beside them, garbage and two proofs in one header.
 */

export interface DpopValues {
  /** `DPoP` header values for a route. */
  header: fc.Arbitrary<string>
  /** `dpop_jkt` values: the proofs' thumbprints, and what is not one. */
  jkt: fc.Arbitrary<string>
}

export async function dpopValues(path: string): Promise<DpopValues> {
  const keys = await generateKeyPair('ES256', { extractable: true })
  const publicJwk = await exportJWK(keys.publicKey)
  const privateJwk = await exportJWK(keys.privateKey)
  const now = Math.floor(Date.now() / 1000)
  const sign = (claims: Record<string, unknown>, jwk = publicJwk, typ = 'dpop+jwt') =>
    new SignJWT({ htm: 'POST', htu: `${OWN_ORIGIN}${path}`, iat: now, jti: randomUUID(), ...claims })
      .setProtectedHeader({ alg: 'ES256', typ, jwk })
      .sign(keys.privateKey)
  const valid = await Promise.all(Array.from({ length: 12 }, () => sign({})))
  const refused = await Promise.all([
    sign({ htu: `${OWN_ORIGIN}/oauth/other` }),
    sign({ htm: 'GET' }),
    sign({ iat: now - 3600 }),
    sign({ nonce: 'x' }),
    sign({}, privateJwk),
    sign({}, publicJwk, 'JWT'),
  ])
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'dpop+jwt', jwk: publicJwk })).toString('base64url')}.e30.`
  const thumbprint = await calculateJwkThumbprint(publicJwk, 'sha256')
  return {
    header: fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...valid) },
      { weight: 2, arbitrary: fc.constantFrom(...refused, unsigned, 'a.b.c', '', 'x'.repeat(9000)) },
      { weight: 1, arbitrary: fc.constantFrom(`${valid[0]}, ${valid[1]}`) },
      { weight: 1, arbitrary: headerText() },
    ),
    jkt: fc.oneof(
      { weight: 3, arbitrary: fc.constant(thumbprint) },
      { weight: 1, arbitrary: fc.constantFrom('', 'A'.repeat(43), 'short', `${thumbprint}=`, '!'.repeat(43)) },
      { weight: 1, arbitrary: headerText(50) },
    ),
  }
}
