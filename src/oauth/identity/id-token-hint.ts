import type { SigningKeys } from './signing-keys.js'

/*
 * id_token_hint (OpenID Connect Core 3.1.2.1 at /oauth/authorize; RP-Initiated Logout 1.0 2 at
 * /oauth/logout): an ID Token Gatehouse issued, sent back as a hint of who the relying party
 * thinks is signed in. Its signature must be one of Gatehouse's published keys and its `iss`
 * Gatehouse; its expiry is not checked, since a relying party sends the ID Token it holds, which
 * has often expired by the time the user signs out or signs in again (RP-Initiated Logout 1.0 2:
 * "The OP SHOULD accept ID Tokens when the RP identified by the ID Token's aud claim ... has a
 * current session or had a recent session", node-oidc-provider does the same). A hint signed by a
 * key no longer published (ID_TOKEN_TTL after its retirement) is refused like a forged one.
 */

/** What Gatehouse reads of a verified hint. */
export interface IdTokenHint {
  sub: string
  /** The `aud` claim as a list (OpenID Connect Core 2: a string or an array). */
  aud: string[]
  /** The session the ID Token was issued in (src/accounts/sessions/end-sessions.ts sessionSid), when it says. */
  sid: string | undefined
}

/** Longer than any ID Token Gatehouse signs (a few hundred bytes of claims, an RS256 signature). */
export const ID_TOKEN_HINT_MAX_LENGTH = 8192

const decoder = new TextDecoder()

/** The hint's claims when Gatehouse signed it; undefined for anything else (forged, malformed, another issuer's). */
export async function verifyIdTokenHint(ctx: { keys: SigningKeys; issuer: string }, hint: string): Promise<IdTokenHint | undefined> {
  if (hint.length > ID_TOKEN_HINT_MAX_LENGTH) return undefined
  const payload = await ctx.keys.verify(hint)
  if (!payload) return undefined
  let claims: unknown
  try {
    claims = JSON.parse(decoder.decode(payload))
  } catch {
    return undefined
  }
  if (typeof claims !== 'object' || claims === null) return undefined
  const { iss, sub, aud, sid } = claims as Record<string, unknown>
  if (iss !== ctx.issuer || typeof sub !== 'string' || sub === '') return undefined
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) && aud.every((a) => typeof a === 'string') ? aud : undefined
  if (!audiences || audiences.length === 0) return undefined
  return { sub, aud: audiences, sid: typeof sid === 'string' ? sid : undefined }
}
