import type { Db } from '../db/connect.js'
import type { Application } from '../db/schema.js'
import type { Clock } from '../lib/clock.js'
import { constantTimeEqual } from '../lib/crypto.js'
import { RATE_LIMITS, rateRule } from '../limits/policy.js'
import { takeSlots } from '../limits/rate-limiter.js'
import { digest } from '../lib/tokens.js'
import { findApplicationByClientId } from '../repositories/applications.js'
import type { RevocationBus } from '../revocation/bus.js'
import { InvalidClientError, InvalidRequestError, SlowDownError } from './errors.js'
import { basicCredentials, optional, type Params } from './params.js'

/** What an endpoint that authenticates clients (token, revoke) needs. */
export interface ClientEndpointContext {
  db: Db
  clock: Clock
  /** Revocations made here (a replayed code, RFC 7009) reach this process's caches through it. */
  bus: RevocationBus
  /** Failed authentications per client in the window before 429 (TOKEN_AUTH_FAILURE_LIMIT). */
  clientAuthFailureLimit: number
}

export interface ClientCredentials {
  clientId: string
  clientSecret: string
  /** Whether HTTP Basic was used: an invalid_client answer then carries WWW-Authenticate. */
  usedBasic: boolean
}

const MAX_ID_LENGTH = 256

/**
 * Client credentials from the Authorization header or the parameters, never both
 * (RFC 6749 2.3: "MUST NOT use more than one authentication method in each request").
 * A client_id parameter next to Basic is tolerated when it names the same client.
 */
export function extractClientCredentials(params: Params, authorization: string | undefined): ClientCredentials {
  const bodyId = optional(params, 'client_id')
  const bodySecret = optional(params, 'client_secret')
  if (authorization !== undefined && /^basic\s/i.test(authorization)) {
    const basic = basicCredentials(authorization)
    if (bodySecret !== undefined) throw new InvalidRequestError('Use HTTP Basic or client_secret in the request, not both')
    if (bodyId !== undefined && bodyId !== basic.id) throw new InvalidRequestError('client_id does not match the HTTP Basic credentials')
    return { clientId: basic.id, clientSecret: basic.secret, usedBasic: true }
  }
  if (bodyId === undefined) throw new InvalidClientError('Client authentication is required: client_id and client_secret')
  if (bodySecret === undefined) throw new InvalidClientError('client_secret is required')
  return { clientId: bodyId, clientSecret: bodySecret, usedBasic: false }
}

/**
 * The failure answer for bad client credentials. Failures are counted per existing client;
 * past the limit the answer is 429 until the window ends. The count is consulted only after
 * the credentials were found wrong, so a client holding its real secret is never locked out.
 */
export async function clientAuthFailure(
  db: Db,
  clock: Clock,
  creds: ClientCredentials,
  clientExists: boolean,
  failureLimit: number,
): Promise<InvalidClientError | SlowDownError> {
  if (clientExists) {
    const rule = rateRule(RATE_LIMITS.clientAuthentication, creds.clientId, { clientAuthFailures: failureLimit })
    const decision = await takeSlots(db, clock, [rule])
    if (!decision.allowed) {
      return new SlowDownError('Too many failed client authentications; retry later', decision.retryAfterSeconds)
    }
  }
  return new InvalidClientError('Client authentication failed', creds.usedBasic)
}

/**
 * The answer to a suspended application's right credentials: invalid_client like any refused
 * authentication (README "Operating Gatehouse"), but saying why, and not counted as a failure.
 */
export function suspendedClient(creds: ClientCredentials): InvalidClientError {
  return new InvalidClientError('This application is suspended by the operator', creds.usedBasic)
}

/** Checks the credentials against the stored digest; throws invalid_client (or 429). */
export async function authenticateClient(db: Db, clock: Clock, creds: ClientCredentials, failureLimit: number): Promise<Application> {
  const app = creds.clientId.length <= MAX_ID_LENGTH ? await findApplicationByClientId(db, creds.clientId) : undefined
  if (app && constantTimeEqual(digest(creds.clientSecret), app.secret_hash)) {
    if (app.suspended_at !== null) throw suspendedClient(creds)
    return app
  }
  throw await clientAuthFailure(db, clock, creds, app !== undefined, failureLimit)
}
