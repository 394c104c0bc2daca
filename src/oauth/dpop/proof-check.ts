import { DpopProofError, checkDpopProof, sha256Hex } from '@gatehouse/verifier/shared'
import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { rememberProof } from '../../repositories/dpop-proofs.js'
import { InvalidDpopProofError, UseDpopNonceError } from '../errors.js'
import type { DpopBinding } from './binding.js'
import { DpopNonces } from './nonces.js'

/*
 * The authorization server's check of a request's DPoP proof (RFC 9449 §4.3, §5, §8): the proof
 * itself by the verifier package's one check, then what only the server judges, its nonce and
 * whether its jti was seen before by any process (docs/decisions/024-dpop-replay-cache.md).
 */

/** A replay-cache row outlives the proof's `iat` window by this much, for clocks a little apart. */
const REPLAY_MARGIN_SECONDS = 5

export interface DpopSettings {
  /** DPOP_PROOF_MAX_AGE_SECONDS: the `iat` window either side of now. */
  readonly maxAgeSeconds: number
  /** DPOP_NONCE: whether proofs must carry a nonce this server provided. */
  readonly nonce: 'off' | 'required'
}

/** What the header held: Node joins repeated headers with ", ", which no compact JWS contains. */
function singleProof(header: string | string[]): string {
  const values = Array.isArray(header) ? header : [header]
  // §4.3 step 1: exactly one DPoP header.
  if (values.length !== 1 || values[0]!.includes(',')) throw new InvalidDpopProofError('The request must carry exactly one DPoP header')
  return values[0]!.trim()
}

/**
 * The DPoP check of one endpoint's requests, built once (src/oauth/use-cases.ts). The request's
 * URL is the endpoint's under the configured issuer, never one built from the Host header, so a
 * proof made for another server's URL is refused whatever the request claims (§4.3 step 9).
 */
export class DpopCheck {
  private readonly nonces: DpopNonces | undefined

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly issuer: string,
    private readonly settings: DpopSettings,
  ) {
    this.nonces = settings.nonce === 'required' ? new DpopNonces(db, clock) : undefined
  }

  /**
   * The binding a request's proof gives, undefined when it carries none; throws
   * invalid_dpop_proof for a bad, replayed or repeated proof, and use_dpop_nonce (with a fresh
   * nonce) when nonces are required and the proof lacks a current one.
   */
  async check(header: string | string[] | undefined, method: string, path: string): Promise<DpopBinding | undefined> {
    if (header === undefined) return undefined
    const proof = singleProof(header)
    const now = this.clock()
    const seconds = Math.floor(now.getTime() / 1000)
    const { maxAgeSeconds } = this.settings
    let checked: Awaited<ReturnType<typeof checkDpopProof>>
    try {
      checked = await checkDpopProof(proof, { method, url: this.issuer + path, now: seconds, maxAgeSeconds })
    } catch (err) {
      if (err instanceof DpopProofError) throw new InvalidDpopProofError(err.message)
      throw err
    }
    // §8: judged before the jti is recorded, so the client's retry with the nonce is not a replay.
    if (this.nonces && !(await this.nonces.accepts(checked.nonce))) {
      throw new UseDpopNonceError('The DPoP proof must carry the nonce this server provides', await this.nonces.current())
    }
    // §11.1: a proof is accepted once, by any process, while its iat could be accepted at all.
    const expiresAt = new Date((checked.iat + maxAgeSeconds + REPLAY_MARGIN_SECONDS) * 1000)
    if (!(await rememberProof(this.db, sha256Hex(`${checked.jkt}:${checked.jti}`), expiresAt, now))) {
      throw new InvalidDpopProofError('The DPoP proof was used before: make a new proof for each request')
    }
    return { jkt: checked.jkt }
  }

  /** §8.1: the nonce a successful DPoP response carries when nonces are required, else undefined. */
  nonceToProvide(): Promise<string> | undefined {
    return this.nonces?.current()
  }
}
