import { type Actor, trailOf } from '../audit/actor.js'
import { type AuditLog, auditDetail } from '../audit/audit-log.js'
import type { JWTPayload } from 'jose'
import type { SigningAlg } from '../db/schema.js'
import { SecretKeyError } from '../lib/secret-key.js'
import { type PublicKeyInfo, type SigningKeys } from './signing-keys.js'

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
  /** `gatehouse keys list`. */
  listKeys(): Promise<PublicKeyInfo[]>
  /** `gatehouse keys rotate`: audited. */
  rotateKeys(actor: Actor): Promise<PublicKeyInfo[]>
}

const UNAVAILABLE =
  'SECRET_KEY is not set: with PostgreSQL, Gatehouse keeps no signing keys and is not an OpenID Provider (README "Sign in with Gatehouse (OpenID Connect)")'

export function identityUseCases(deps: { keys: SigningKeys | undefined; audit: AuditLog }): IdentityUseCases {
  const { keys, audit } = deps
  const required = (): SigningKeys => {
    if (!keys) throw new SecretKeyError(UNAVAILABLE)
    return keys
  }
  return {
    available: keys !== undefined,
    jwks: async () => (keys ? keys.jwks() : undefined),
    signIdToken: (alg, payload) => required().sign(alg, payload),
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
