import { type Actor, trailOf } from '../../audit/actor.js'
import { type AuditLog, auditDetail } from '../../audit/audit-log.js'
import type { JWTPayload } from 'jose'
import type { SigningAlg } from '../../db/schema.js'
import type { Db } from '../../db/connect.js'
import { type PublicKeyInfo, SIGNING_ALGS, type SigningKeys } from './signing-keys.js'
import type { ServerTokenCache } from '../token/token-validity.js'
import type { BindingCheck } from '../token/presentation.js'
import { type UserInfoAnswer, answerUserInfo } from './userinfo.js'
import type { ClientDirectory } from '../clients/client-directory.js'
import { LOGOUT_PATH, type LogoutRequest, hintMatchesSession, validateLogoutRequest } from '../logout/logout.js'
import { hasGrant } from '../../repositories/grants.js'

/*
 * Gatehouse as an OpenID Provider (docs/openid-connect.md): the signing
 * keys' use cases. There is always a sealing key for the keys (src/lib/secret-key.ts: a server on
 * PostgreSQL without SECRET_KEY does not start), so every deployment is an OpenID Provider.
 */

export interface IdentityUseCases {
  /** GET /.well-known/jwks.json: the JWKS document's text. */
  jwks(): Promise<string>
  /** A JWT signed with the current key of `alg` (the token endpoint's ID Tokens). */
  signIdToken(alg: SigningAlg, payload: JWTPayload): Promise<string>
  /**
   * GET and POST /oauth/userinfo (OpenID Connect Core 5.3); `binding` judges how the token was
   * presented (RFC 9449 §7: `bearerBinding`, or the resource use cases' `dpopBinding`).
   */
  userInfo(token: string, binding: BindingCheck): Promise<UserInfoAnswer>
  /** OpenID Connect Discovery 1.0 3. */
  discovery(): Readonly<Record<string, unknown>>
  /**
   * GET and POST /oauth/logout (OpenID Connect RP-Initiated Logout 1.0 2): whether the request
   * is sound, whether it names `session`, so that it ends without asking (`atOnce`), and whether
   * its post-logout redirect is trusted for `session` (`request.trusted`). The session is ended
   * by accounts.logOut, the one log-out.
   */
  logoutRequest(input: unknown, session: { id: string; sid?: string } | null): Promise<LogoutAnswer>
  /** `gatehouse keys list`. */
  listKeys(): Promise<PublicKeyInfo[]>
  /** `gatehouse keys rotate`: audited. */
  rotateKeys(actor: Actor): Promise<PublicKeyInfo[]>
}

export type LogoutAnswer = { kind: 'refused'; message: string } | { kind: 'ok'; request: LogoutRequest; atOnce: boolean }

export interface IdentityDeps {
  keys: SigningKeys
  audit: AuditLog
  db: Db
  tokens: ServerTokenCache
  /** The RFC 8414 document, which discovery extends. */
  metadata: Readonly<Record<string, unknown>>
  issuer: string
  /** The end_session_endpoint reads applications fresh, as /oauth/authorize does (src/oauth/clients/client-directory.ts). */
  clientDirectory: Pick<ClientDirectory, 'resolve'>
}

export function identityUseCases(deps: IdentityDeps): IdentityUseCases {
  const { keys, audit } = deps
  const discovery = openIdConfiguration(deps.metadata, deps.issuer)
  return {
    jwks: () => keys.jwks(),
    signIdToken: (alg, payload) => keys.sign(alg, payload),
    userInfo: (token, binding) => answerUserInfo(deps, token, binding),
    discovery: () => discovery,
    async logoutRequest(input, session) {
      const ctx = {
        keys,
        issuer: deps.issuer,
        load: (id: string) => deps.clientDirectory.resolve(id),
        hasGrant: (userId: string, applicationId: string) => hasGrant(deps.db, userId, applicationId),
      }
      const outcome = await validateLogoutRequest(ctx, input, session)
      if (outcome.kind === 'refused') return outcome
      return { kind: 'ok', request: outcome.request, atOnce: session !== null && hintMatchesSession(outcome.request.hint, session) }
    },
    listKeys: () => keys.list(),
    async rotateKeys(actor) {
      const added = await keys.rotate()
      await trailOf(audit, actor).record({
        event: 'operator.signing_keys_rotated',
        userId: null,
        detail: auditDetail.signingKeysRotated(added, added[0]!.notBefore),
      })
      return added
    },
  }
}

/** The claims Gatehouse states, in ID Tokens or from UserInfo (OpenID Connect Core 2, 5.1). */
const CLAIMS_SUPPORTED = [
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'at_hash',
  'amr',
  'sid',
  'email',
  'email_verified',
  'name',
  'updated_at',
]

/**
 * OpenID Connect Discovery 1.0 3: the RFC 8414 document (built once in src/oauth/use-cases.ts,
 * the one source of the endpoints, scopes, response types and client authentication), and what
 * an OpenID Provider states besides. Hybrid response types are not offered.
 */
function openIdConfiguration(metadata: Readonly<Record<string, unknown>>, issuer: string): Readonly<Record<string, unknown>> {
  return Object.freeze({
    ...metadata,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    userinfo_endpoint: `${issuer}/oauth/userinfo`,
    // OpenID Connect RP-Initiated Logout 1.0 2.1 (src/oauth/logout/logout.ts).
    end_session_endpoint: `${issuer}${LOGOUT_PATH}`,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [...SIGNING_ALGS],
    claims_supported: CLAIMS_SUPPORTED,
    claims_parameter_supported: false,
  })
}
