import type { Db } from '../db/connect.js'
import { digest, generateAccessToken, generateAuthorizationCode } from '../lib/tokens.js'
import { insertAccessToken } from '../repositories/access-tokens.js'
import { insertAuthorizationCode, insertCodeUnderGrant } from '../repositories/authorization-codes.js'
import { upsertGrant } from '../repositories/grants.js'
import type { AuthorizationRequest } from './authorize-request.js'
import { errorLocation, responseMode } from './authorize-request.js'
import { AccessDeniedError } from './errors.js'
import { buildRedirect } from './redirect-uri.js'
import { formatScope } from './scope.js'

/** Spec 3: a code is usable for 10 minutes after it is issued. */
export const CODE_LIFETIME_MS = 10 * 60_000

/**
 * Whether standing consent may stand in for the page. Only for the code flow: the token flow
 * always asks, since nothing authenticates the client (RFC 8252 8.6, RFC 6749 10.2), and
 * `prompt=consent` asks again by request.
 */
export function mayUseRememberedConsent(req: AuthorizationRequest): boolean {
  return req.responseType === 'code' && req.prompt !== 'consent'
}

/**
 * The code under the user's standing consent, when it covers these scopes (or more); undefined
 * when the user must be asked. One statement: no grant read, no transaction, and the grant is
 * left as it is (consent is only recorded when given).
 */
export async function issueUnderRememberedConsent(
  db: Db,
  req: AuthorizationRequest,
  userId: string,
  now: Date,
  issuer: string,
): Promise<string | undefined> {
  const { code, row } = newCode(req, userId, now)
  const issued = await insertCodeUnderGrant(db, row, req.application)
  return issued ? buildRedirect(req.redirectUri, { code, state: req.state, iss: issuer }, 'query') : undefined
}

/** A fresh code and the row fields binding it to the request (RFC 6749 4.1.2, RFC 7636 4.4). */
function newCode(req: AuthorizationRequest, userId: string, now: Date) {
  const code = generateAuthorizationCode()
  const row = {
    codeHash: digest(code),
    userId,
    scopes: req.scopes,
    redirectUri: req.sentRedirectUri,
    codeChallenge: req.codeChallenge,
    codeChallengeMethod: req.codeChallengeMethod,
    now,
    expiresAt: new Date(now.getTime() + CODE_LIFETIME_MS),
  }
  return { code, row }
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
      const { code, row } = newCode(req, userId, now)
      const inserted = await insertAuthorizationCode(trx, { ...(nonce ? { id: nonce } : {}), ...row, applicationId: req.application.id })
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
