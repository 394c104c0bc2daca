import { type Actor, trailOf } from '../audit/actor.js'
import { type AuditLog, auditDetail } from '../audit/audit-log.js'
import type { JWTPayload } from 'jose'
import type { SigningAlg } from '../db/schema.js'
import { SecretKeyError } from '../lib/secret-key.js'
import type { Db } from '../db/connect.js'
import { type PublicKeyInfo, SIGNING_ALGS, type SigningKeys } from './signing-keys.js'
import type { ServerTokenCache } from './token-validity.js'
import { type UserInfoAnswer, answerUserInfo } from './userinfo.js'
import type { ApplicationCache } from './application-cache.js'
import { LOGOUT_PATH, type LogoutRequest, hintMatchesSession, validateLogoutRequest } from './logout.js'
import { hasGrant } from '../repositories/grants.js'

/*
 * Gatehouse as an OpenID Provider (issue 24, README "Sign in with Gatehouse (OpenID Connect)"):
 * the signing keys' use cases. Without a sealing key (PostgreSQL and no SECRET_KEY) there are no
 * keys, and Gatehouse is an OAuth 2 server only.
 */

export interface IdentityUseCases {
  /** Whether Gatehouse is an OpenID Provider: a sealing key exists for the signing keys. */
  readonly available: boolean
  /** GET /.well-known/jwks.json: the JWKS document's text; undefined when not available. */
  jwks(): Promise<string | undefined>
  /** A JWT signed with the current key of `alg` (the token endpoint's ID Tokens). */
  signIdToken(alg: SigningAlg, payload: JWTPayload): Promise<string>
  /** GET and POST /oauth/userinfo (OpenID Connect Core 5.3); 'invalid' when Gatehouse is not an OpenID Provider. */
  userInfo(token: string): Promise<UserInfoAnswer>
  /** OpenID Connect Discovery 1.0 3; undefined when Gatehouse is not an OpenID Provider. */
  discovery(): Readonly<Record<string, unknown>> | undefined
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

const UNAVAILABLE =
  'SECRET_KEY is not set: with PostgreSQL, Gatehouse keeps no signing keys and is not an OpenID Provider (README "Sign in with Gatehouse (OpenID Connect)")'

export interface IdentityDeps {
  keys: SigningKeys | undefined
  audit: AuditLog
  db: Db
  tokens: ServerTokenCache
  /** The RFC 8414 document, which discovery extends. */
  metadata: Readonly<Record<string, unknown>>
  issuer: string
  /** The end_session_endpoint reads applications fresh from the database (`load`). */
  applications: Pick<ApplicationCache, 'load'>
}

export function identityUseCases(deps: IdentityDeps): IdentityUseCases {
  const { keys, audit } = deps
  const discovery = keys && openIdConfiguration(deps.metadata, deps.issuer)
  const required = (): SigningKeys => {
    if (!keys) throw new SecretKeyError(UNAVAILABLE)
    return keys
  }
  return {
    available: keys !== undefined,
    jwks: async () => (keys ? keys.jwks() : undefined),
    signIdToken: (alg, payload) => required().sign(alg, payload),
    userInfo: async (token) => (keys ? answerUserInfo(deps, token) : { kind: 'invalid' }),
    discovery: () => discovery,
    async logoutRequest(input, session) {
      const ctx = {
        keys,
        issuer: deps.issuer,
        load: (id: string) => deps.applications.load(id),
        hasGrant: (userId: string, applicationId: string) => hasGrant(deps.db, userId, applicationId),
      }
      const outcome = await validateLogoutRequest(ctx, input, session)
      if (outcome.kind === 'refused') return outcome
      return { kind: 'ok', request: outcome.request, atOnce: session !== null && hintMatchesSession(outcome.request.hint, session) }
    },
    listKeys: () => required().list(),
    async rotateKeys(actor) {
      const added = await required().rotate()
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
    // OpenID Connect RP-Initiated Logout 1.0 2.1 (src/oauth/logout.ts).
    end_session_endpoint: `${issuer}${LOGOUT_PATH}`,
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [...SIGNING_ALGS],
    claims_supported: CLAIMS_SUPPORTED,
    claims_parameter_supported: false,
  })
}
