import type { Db } from '../db/connect.js'
import { digest, generateAccessToken, generateAuthorizationCode } from '../lib/tokens.js'
import { insertAccessToken } from '../repositories/access-tokens.js'
import { insertAuthorizationCode } from '../repositories/authorization-codes.js'
import { findGrant, upsertGrant } from '../repositories/grants.js'
import type { AuthorizationRequest } from './authorize-request.js'
import { errorLocation, responseMode } from './authorize-request.js'
import { AccessDeniedError } from './errors.js'
import { buildRedirect } from './redirect-uri.js'
import { formatScope, isSubset } from './scope.js'

/** Spec 3: a code is usable for 10 minutes after it is issued. */
export const CODE_LIFETIME_MS = 10 * 60_000

/**
 * Whether the user must be asked. The code flow reuses standing consent covering these scopes;
 * the token flow always asks, since nothing authenticates the client (RFC 8252 8.6,
 * RFC 6749 10.2), and `prompt=consent` asks again by request.
 */
export async function needsConsent(db: Db, req: AuthorizationRequest, userId: string): Promise<boolean> {
  if (req.responseType === 'token' || req.prompt === 'consent') return true
  const grant = await findGrant(db, userId, req.application.id)
  return !grant || !isSubset(req.scopes, grant.scopes)
}

/**
 * Issues the response to an approved request and records the consent, in one transaction.
 * `nonce` is the consent form's one-time id, used as the code's (or token's) primary key: a
 * replayed or double-submitted form collides and gets undefined instead of a second code.
 */
export async function approveAuthorization(
  db: Db,
  req: AuthorizationRequest,
  userId: string,
  now: Date,
  issuer: string,
  nonce?: string,
): Promise<string | undefined> {
  return db.transaction().execute(async (trx) => {
    const grant = { userId, applicationId: req.application.id, scopes: req.scopes, now }
    if (req.responseType === 'code') {
      const code = generateAuthorizationCode()
      const inserted = await insertAuthorizationCode(trx, {
        ...(nonce ? { id: nonce } : {}),
        codeHash: digest(code),
        applicationId: req.application.id,
        userId,
        scopes: req.scopes,
        redirectUri: req.sentRedirectUri,
        codeChallenge: req.codeChallenge,
        codeChallengeMethod: req.codeChallengeMethod,
        now,
        expiresAt: new Date(now.getTime() + CODE_LIFETIME_MS),
      })
      if (!inserted) return undefined
      await upsertGrant(trx, grant)
      return buildRedirect(req.redirectUri, { code, state: req.state, iss: issuer }, 'query')
    }
    // RFC 6749 4.2.2: the token in the fragment, which browsers never send to servers.
    const token = generateAccessToken()
    const inserted = await insertAccessToken(trx, {
      ...(nonce ? { id: nonce } : {}),
      tokenHash: digest(token),
      applicationId: req.application.id,
      userId,
      scopes: req.scopes,
      now,
    })
    if (!inserted) return undefined
    await upsertGrant(trx, grant)
    return buildRedirect(
      req.redirectUri,
      { access_token: token, token_type: 'Bearer', scope: formatScope(req.scopes), state: req.state, iss: issuer },
      'fragment',
    )
  })
}

/** RFC 6749 4.1.2.1: the resource owner denied the request (or could not be asked). */
export function denyAuthorization(req: AuthorizationRequest, issuer: string, description = 'The user denied the request'): string {
  return errorLocation(
    { redirectUri: req.redirectUri, state: req.state, mode: responseMode(req.responseType) },
    new AccessDeniedError(description),
    issuer,
  )
}
