import { sha256Hex } from '../../lib/crypto.js'
import { generateAccessToken } from '../../lib/tokens.js'
import { insertMachineToken } from '../../repositories/access-tokens.js'
import type { TokenQuota } from '../../revocation/token-quota.js'
import { InvalidDpopProofError, InvalidScopeError, UnauthorizedClientError } from '../errors.js'
import type { DpopBinding } from '../dpop/binding.js'
import { type ScopeVocabulary, formatScope } from '../grants/scope.js'
import { optional, type Params } from '../params.js'
import { type ClientCredentials, type ClientEndpointContext, authenticateClient } from './client-auth.js'
import { type ResourceSettings, audienceTtlSeconds, resourceTargets } from '../resources/resource-indicators.js'

/*
 * POST /oauth/token, grant_type=client_credentials (RFC 6749 §4.4): a machine application asks
 * for a token for itself, acting for no user (docs/decisions/021-machine-tokens.md). Only an
 * operator enables the grant and chooses its scopes (`gatehouse apps client-credentials`, the
 * admin pages); nothing of a user's grants or consent is read or written. The token is an
 * ordinary opaque token whose row has no user, so introspection, token info and verifiers answer
 * with the client as `sub` (RFC 9068 §2.2). No refresh token (§4.4.3): an application whose owner
 * chose an access-token lifetime gets an expiring token and asks again (docs/expiring-tokens.md).
 */

/** RFC 6749 §5.1, as the code exchange answers it (TokenResponse) without an ID Token: there is no user. */
export interface MachineTokenResponse {
  access_token: string
  /** RFC 9449 §5: `DPoP` for a token bound to the key of the request's proof. */
  token_type: 'Bearer' | 'DPoP'
  scope: string
  created_at: number
  expires_in?: number
}

export type ClientCredentialsContext = ClientEndpointContext & {
  tokenQuota: Pick<TokenQuota, 'issued'>
  scopes: ScopeVocabulary
  resources: ResourceSettings
}

export async function issueClientCredentialsToken(
  ctx: ClientCredentialsContext,
  creds: ClientCredentials,
  params: Params,
  dpop?: DpopBinding,
  resources: string[] | null = null,
): Promise<MachineTokenResponse> {
  // §4.4.2: the client authenticates; a public client has no secret and so cannot (§2.1, §3.2.1).
  const application = await authenticateClient(ctx.db, ctx.clock, creds, ctx.clientAuthFailureLimit, ctx.metadataHosts)
  const granted = application.kind === 'machine' ? application.client_credentials_scopes : null
  if (granted === null) {
    throw new UnauthorizedClientError('The client credentials grant is not enabled for this application: an operator enables it')
  }
  // RFC 9449 §5.2 `dpop_bound_access_tokens`.
  if (application.require_dpop && dpop === undefined) {
    throw new InvalidDpopProofError('This application requires DPoP: send a DPoP proof with the token request')
  }
  const scopes = scopesOf(ctx.scopes, optional(params, 'scope'), granted)
  // RFC 8707 §2: a token for these APIs alone, expiring (docs/decisions/025-audiences.md).
  const audience =
    resources === null
      ? undefined
      : {
          identifiers: resources,
          ttlSeconds: audienceTtlSeconds(application.access_token_ttl_seconds, await resourceTargets(ctx.db, resources), ctx.resources),
        }
  const now = ctx.clock()
  const token = generateAccessToken()
  const issued = await insertMachineToken(ctx.db, {
    tokenHash: sha256Hex(token),
    applicationId: application.id,
    scopes,
    now,
    dpopJkt: dpop?.jkt,
    audience,
  })
  // Suspended, or the grant turned off, between the two statements.
  if (!issued) throw new UnauthorizedClientError('The client credentials grant is not enabled for this application: an operator enables it')
  ctx.tokenQuota.issued({ userId: null, applicationId: application.id })
  const response: MachineTokenResponse = {
    access_token: token,
    token_type: dpop === undefined ? 'Bearer' : 'DPoP',
    scope: formatScope(scopes),
    created_at: Math.floor(issued.created_at.getTime() / 1000),
  }
  if (issued.expires_at !== null) response.expires_in = Math.round((issued.expires_at.getTime() - issued.created_at.getTime()) / 1000)
  return response
}

/**
 * §4.4.2 and §3.3: `scope` is optional and defaults to everything the operator granted; what is
 * asked must lie within it. The granted list already holds the scopes its own imply (stored at
 * grant time), so those implied by a subset lie within it too.
 */
function scopesOf(vocabulary: ScopeVocabulary, raw: string | undefined, granted: readonly string[]): string[] {
  if (raw === undefined || raw.trim() === '') {
    const scopes = vocabulary.normalize(granted)
    if (scopes.length === 0) throw new InvalidScopeError('None of the scopes granted to this application is defined any more')
    return scopes
  }
  const scopes = vocabulary.parse(raw, granted)
  const beyond = scopes.find((s) => !granted.includes(s))
  if (beyond !== undefined) throw new InvalidScopeError(`This application was not granted the scope ${beyond}`)
  return scopes
}
