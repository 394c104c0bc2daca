import { randomUUID } from 'node:crypto'
import { type CryptoKey, type JWK, SignJWT, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose'
import { accessTokenHash } from '@gatehouse/verifier/shared'

/** A client's DPoP key (RFC 9449 §4), and proofs made with it as a client would. */
export interface DpopKey {
  readonly jwk: JWK
  /** RFC 9449 §6.1: the thumbprint a token bound to this key carries. */
  readonly jkt: string
  /**
   * A proof for one request. `ath` is the hash of `accessToken` unless `omit` names it; `iat`
   * is `now` (seconds); `claims` overrides or adds claims.
   */
  proof(request: {
    method: string
    url: string
    now: number
    accessToken?: string
    omit?: 'ath'
    claims?: Record<string, unknown>
  }): Promise<string>
}

export async function dpopKey(alg: 'ES256' | 'EdDSA' = 'ES256'): Promise<DpopKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true })
  const jwk = await exportJWK(publicKey)
  const jkt = await calculateJwkThumbprint(jwk, 'sha256')
  return { jwk, jkt, proof: (request) => signProof(privateKey, alg, jwk, request) }
}

function signProof(key: CryptoKey, alg: string, jwk: JWK, request: Parameters<DpopKey['proof']>[0]): Promise<string> {
  const ath = request.accessToken === undefined || request.omit === 'ath' ? undefined : accessTokenHash(request.accessToken)
  return new SignJWT({ htm: request.method, htu: request.url, jti: randomUUID(), iat: request.now, ath, ...request.claims })
    .setProtectedHeader({ typ: 'dpop+jwt', alg, jwk })
    .sign(key)
}
