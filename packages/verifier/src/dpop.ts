import { createHash } from 'node:crypto'
import { EmbeddedJWK, type JWK, calculateJwkThumbprint, decodeProtectedHeader, errors, jwtVerify } from 'jose'

/*
 * DPoP proofs (RFC 9449): the one check of a proof, used by Gatehouse at its token, PAR and
 * UserInfo endpoints and by every verifier at a resource server. What a proof's `jti` was seen
 * before, and which nonce is current, are the caller's: Gatehouse shares its replay cache between
 * processes through the database, a verifier keeps one in memory (RFC 9449 §11.1).
 */

/**
 * The asymmetric algorithms a proof may be signed with (RFC 9449 §5.1
 * `dpop_signing_alg_values_supported`): never `none`, never a MAC (§4.3 step 5).
 */
export const DPOP_SIGNING_ALGS = Object.freeze([
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
  'PS256',
  'PS384',
  'PS512',
  'RS256',
  'RS384',
  'RS512',
] as const)

/** How far a proof's `iat` may be from now, by default: a proof is made for one request, at once. */
export const DEFAULT_DPOP_MAX_AGE_SECONDS = 60

/** A proof longer than this is refused before it is parsed: a P-521 or RSA-4096 proof is well under 2 KiB. */
export const MAX_DPOP_PROOF_LENGTH = 8192

/** A jti is a random identifier (§4.2); a longer one is refused rather than stored. */
const MAX_JTI_LENGTH = 256

/** Members only a private JWK has (RFC 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const

export interface DpopRequest {
  /** The request's method (`htm`, §4.2). */
  readonly method: string
  /** The request's URL as its client addressed it, with or without query and fragment (`htu`, §4.3 step 9). */
  readonly url: string
  /** The access token presented with the proof, at a resource server: the proof must hash it (`ath`, §4.2). */
  readonly accessToken?: string
  /** Now, in seconds since the epoch, by the caller's clock. */
  readonly now: number
  /** The `iat` window either side of now (§11.1); DEFAULT_DPOP_MAX_AGE_SECONDS when absent. */
  readonly maxAgeSeconds?: number
}

/** What a proof that passed says: the key's thumbprint (`jkt`, §6.1) and what the caller still judges. */
export interface DpopProof {
  readonly jkt: string
  readonly jti: string
  readonly iat: number
  /** The server-provided nonce it carries (§8), for the caller to judge. */
  readonly nonce: string | undefined
}

/** A proof that fails a check of §4.3: answered `invalid_dpop_proof` (§5, §7.1). */
export class DpopProofError extends Error {
  override readonly name = 'DpopProofError'
}

/** RFC 9449 §4.3 step 9: the target URI without query and fragment, normalised (RFC 3986 §6.2.2, §6.2.3). */
export function normalizeHtu(value: string): string | undefined {
  if (!URL.canParse(value)) return undefined
  const url = new URL(value)
  return `${url.protocol}//${url.host}${url.pathname}`
}

/** RFC 9449 §4.2 `ath`: base64url of the SHA-256 of the access token's ASCII. */
export function accessTokenHash(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest('base64url')
}

/**
 * Checks one proof as RFC 9449 §4.3 says, steps 2 to 9, 11 and 12: well formed, `typ`
 * `dpop+jwt`, an asymmetric algorithm of DPOP_SIGNING_ALGS, signed by the public key in its
 * `jwk`, `htm` and `htu` those of the request, `iat` within the window, and `ath` the hash of
 * the presented token. Throws DpopProofError naming the first check that failed. Step 10 (the
 * nonce) and the jti's replay are the caller's, with what this returns.
 */
export async function checkDpopProof(proof: string, request: DpopRequest): Promise<DpopProof> {
  if (proof.length === 0 || proof.length > MAX_DPOP_PROOF_LENGTH) throw new DpopProofError('The DPoP proof is empty or too long')
  const header = protectedHeader(proof)
  if (header.typ !== 'dpop+jwt') throw new DpopProofError('The DPoP proof\'s "typ" is not dpop+jwt')
  if (typeof header.alg !== 'string' || !(DPOP_SIGNING_ALGS as readonly string[]).includes(header.alg)) {
    throw new DpopProofError(`The DPoP proof's "alg" is not one of ${DPOP_SIGNING_ALGS.join(', ')}`)
  }
  const jwk = header.jwk
  if (typeof jwk !== 'object' || jwk === null) throw new DpopProofError('The DPoP proof has no "jwk" header')
  if (PRIVATE_MEMBERS.some((m) => m in jwk)) throw new DpopProofError('The DPoP proof\'s "jwk" must be a public key')
  const payload = await verifiedPayload(proof, request.now)
  const { jti, htm, htu, iat } = payload
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI_LENGTH)
    throw new DpopProofError('The DPoP proof has no valid "jti"')
  if (htm !== request.method) throw new DpopProofError('The DPoP proof\'s "htm" is not this request\'s method')
  const target = normalizeHtu(request.url)
  if (typeof htu !== 'string' || target === undefined || normalizeHtu(htu) !== target) {
    throw new DpopProofError('The DPoP proof\'s "htu" is not this request\'s URL')
  }
  const window = request.maxAgeSeconds ?? DEFAULT_DPOP_MAX_AGE_SECONDS
  if (typeof iat !== 'number' || !Number.isFinite(iat) || Math.abs(iat - request.now) > window) {
    throw new DpopProofError('The DPoP proof\'s "iat" is not within the accepted window')
  }
  if (request.accessToken !== undefined && payload.ath !== accessTokenHash(request.accessToken)) {
    throw new DpopProofError('The DPoP proof\'s "ath" does not match the access token')
  }
  const nonce = payload.nonce
  if (nonce !== undefined && typeof nonce !== 'string') throw new DpopProofError('The DPoP proof\'s "nonce" is not a string')
  return { jkt: await calculateJwkThumbprint(jwk as JWK, 'sha256'), jti, iat, nonce }
}

function protectedHeader(proof: string): ReturnType<typeof decodeProtectedHeader> {
  try {
    return decodeProtectedHeader(proof)
  } catch {
    throw new DpopProofError('The DPoP proof is not a JWT')
  }
}

async function verifiedPayload(proof: string, now: number): Promise<Record<string, unknown>> {
  try {
    const { payload } = await jwtVerify(proof, EmbeddedJWK, {
      typ: 'dpop+jwt',
      algorithms: [...DPOP_SIGNING_ALGS],
      currentDate: new Date(now * 1000),
    })
    return payload as Record<string, unknown>
  } catch (err) {
    if (err instanceof errors.JOSEError) throw new DpopProofError(`The DPoP proof is invalid: ${err.message}`)
    throw err
  }
}
