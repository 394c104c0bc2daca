import {
  BearerChallenges,
  DEFAULT_DPOP_MAX_AGE_SECONDS,
  DpopChallenges,
  type ProofReplayCache,
  type VerifiedToken,
  type VerifyFailure,
  checkPresentation,
  sha256Hex,
} from '@gatehouse/verifier/shared'
import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { rememberProof } from '../../repositories/dpop-proofs.js'

/*
 * How Gatehouse's own resource endpoints (UserInfo, token info) judge the way a token was
 * presented (RFC 9449 §7): with the verifier package's one check, but with the replay cache in
 * the database, so that a proof is used once across every process
 * (docs/decisions/024-dpop-replay-cache.md).
 */

/** RFC 6750 3 challenges that also offer DPoP (RFC 9449 §7.1: one challenge per scheme accepted). */
export const bearerChallenges = new BearerChallenges('gatehouse', true)
/** RFC 9449 §7.1: the answers to a request that used the DPoP scheme. */
export const dpopChallenges = new DpopChallenges()

/** Whether a token, already found valid, was presented as its binding requires: the refusal, or undefined. */
export type BindingCheck = (token: VerifiedToken, accessToken: string) => VerifyFailure | undefined | Promise<VerifyFailure | undefined>

/** RFC 9449 §7.2: a token bound to a key is refused as a bearer token. */
export const bearerBinding: BindingCheck = (token) => (token.jkt === null ? undefined : bearerChallenges.boundAsBearer)

export interface PresentationContext {
  db: Db
  clock: Clock
  /** PUBLIC_URL: the endpoints' URLs are built from it, never from the Host header. */
  issuer: string
  dpopMaxAgeSeconds?: number
}

/** The replay cache every process shares: a proof's thumbprint and jti, hashed, until it could not be accepted anyway. */
function databaseReplayCache(ctx: PresentationContext): ProofReplayCache {
  return { remember: (key, expiresAt) => rememberProof(ctx.db, sha256Hex(key), new Date(expiresAt * 1000), ctx.clock()) }
}

/**
 * RFC 9449 §7.1 for a request to `path` with `method`: the token must be bound, and the request's
 * one proof (`dpop`, the DPoP header) must be for `${issuer}${path}` and this method, hash this
 * token, be signed by its key, and never have been used.
 */
export function dpopBinding(
  ctx: PresentationContext,
  dpop: string | readonly string[] | undefined,
  method: string,
  path: string,
): BindingCheck {
  return (token, accessToken) => {
    const maxAgeSeconds = ctx.dpopMaxAgeSeconds ?? DEFAULT_DPOP_MAX_AGE_SECONDS
    const request = { method, url: `${ctx.issuer}${path}`, now: Math.floor(ctx.clock().getTime() / 1000), maxAgeSeconds }
    return checkPresentation(dpopChallenges, token, accessToken, dpop, request, databaseReplayCache(ctx))
  }
}
