import type { DpopChallenges } from './bearer.js'
import { DEFAULT_DPOP_MAX_AGE_SECONDS, type DpopProof, DpopProofError, checkDpopProof } from './dpop.js'
import { TtlLru } from './ttl-lru.js'
import type { VerifiedToken, VerifyFailure } from './types.js'

/*
 * A token presented with `Authorization: DPoP` (RFC 9449 §7.1): the one check, shared by every
 * verifier and by Gatehouse's own UserInfo and token info. Only the replay cache differs: a
 * verifier keeps one in memory, Gatehouse shares one between its processes through the database.
 */

/** Where proofs already accepted are remembered until their `iat` could not be accepted anyway (RFC 9449 §11.1). */
export interface ProofReplayCache {
  /**
   * Records `key` (the proof's key thumbprint and its jti) until `expiresAt` (seconds since the
   * epoch) and answers true; answers false when it was recorded before and has not expired.
   */
  remember(key: string, expiresAt: number): boolean | Promise<boolean>
}

/** Proofs remembered by one process: a bounded LRU, keyed by thumbprint and jti. */
export class MemoryReplayCache implements ProofReplayCache {
  readonly #seen: TtlLru<true>
  readonly #now: () => number

  /** `now`: milliseconds since the epoch. */
  constructor(maxEntries: number, now: () => number) {
    this.#seen = new TtlLru(maxEntries)
    this.#now = now
  }

  get size(): number {
    return this.#seen.size
  }

  remember(key: string, expiresAt: number): boolean {
    if (this.#seen.get(key, this.#now()) !== undefined) return false
    this.#seen.set(key, true, expiresAt * 1000)
    return true
  }
}

/** What the proof must match: the request as its client addressed it. */
export interface PresentedRequest {
  readonly method: string
  /** Absolute: the verifier's public origin (or the request's) and the path. */
  readonly url: string
  /** Seconds since the epoch. */
  readonly now: number
  readonly maxAgeSeconds?: number
}

/** The one proof of a request (RFC 9449 §4.3 step 1); null when there are several, undefined when none. */
export function singleProof(dpop: string | readonly string[] | undefined): string | null | undefined {
  if (dpop === undefined) return undefined
  if (typeof dpop !== 'string') return dpop.length === 0 ? undefined : dpop.length === 1 ? singleProof(dpop[0]) : null
  // node joins a repeated header with ", "; a compact JWS never holds a comma.
  return dpop.includes(',') ? null : dpop
}

/**
 * RFC 9449 §7.1: the token, already found valid, must be bound (`jkt`), and the request must carry
 * exactly one proof that passes §4.3 for this method and URL with `ath` the hash of this token,
 * signed by the key the token is bound to, and never seen before. The failure, or undefined.
 */
export async function checkPresentation(
  challenges: DpopChallenges,
  token: VerifiedToken,
  accessToken: string,
  dpop: string | readonly string[] | undefined,
  request: PresentedRequest,
  replay: ProofReplayCache,
): Promise<VerifyFailure | undefined> {
  if (token.jkt === null) return challenges.notBound
  const proof = singleProof(dpop)
  if (proof === undefined) return challenges.missingProof
  if (proof === null) return challenges.manyProofs
  let checked: DpopProof
  try {
    checked = await checkDpopProof(proof, { ...request, accessToken })
  } catch (err) {
    if (err instanceof DpopProofError) return challenges.proof(err.message)
    throw err
  }
  if (checked.jkt !== token.jkt) return challenges.otherKey
  // Past iat + window the proof's iat refuses it anyway, so it need not be remembered longer.
  const expiresAt = checked.iat + (request.maxAgeSeconds ?? DEFAULT_DPOP_MAX_AGE_SECONDS) + 1
  if (!(await replay.remember(`${checked.jkt} ${checked.jti}`, expiresAt))) return challenges.replayed
  return undefined
}

/** The URL the client addressed: `url` when absolute, else resolved against the public origin or the request's. */
export function requestUrl(url: string, publicOrigin: string | undefined, origin: string | undefined): string {
  if (!url.startsWith('/')) return url
  return (publicOrigin ?? origin ?? '') + url
}
