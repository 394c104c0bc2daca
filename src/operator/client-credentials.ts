import { IDENTITY_SCOPES } from '@gatehouse/verifier/shared'
import { auditDetail } from '../audit/audit-log.js'
import { OAuthError, type ScopeVocabulary } from '../oauth/index.js'
import { setClientCredentialsScopes } from '../repositories/operator-applications.js'
import { revoke } from '../revocation/revoke.js'
import { type OperatorContext, RefusedError, requireApplication } from './moderation.js'

/*
 * The client credentials grant (RFC 6749 §4.4) of a machine application, enabled, changed or
 * turned off by an operator only (docs/decisions/021-machine-tokens.md): a machine token acts
 * for no user, so nobody's consent bounds what it may do; the operator's choice of scopes does.
 * The console has no form for it, so a self-registered developer cannot give their own
 * application this power.
 */

export type ClientCredentialsChange = { changed: boolean; scopes: readonly string[] | null; revoked: number }

/**
 * Sets the scopes the application's client credentials grant may issue; null turns it off. Its
 * live machine tokens are revoked when it loses a scope or the grant (its users' tokens stay).
 */
export async function setClientCredentials(
  ctx: OperatorContext & { scopes: ScopeVocabulary },
  applicationId: string,
  raw: string | null,
  now: Date,
): Promise<ClientCredentialsChange> {
  const app = await requireApplication(ctx.db, { id: applicationId })
  const scopes = raw === null ? null : grantableScopes(ctx.scopes, raw)
  if (scopes !== null && app.kind !== 'machine') {
    throw new RefusedError(
      `${app.name} (${app.client_id}) is not a machine application: only those acting for no user may use client credentials (docs/applications.md).`,
    )
  }
  const before = app.client_credentials_scopes
  if (sameScopes(before, scopes)) return { changed: false, scopes, revoked: 0 }
  const narrowed = before !== null && (scopes === null || before.some((s) => !scopes.includes(s)))
  const revoked = await ctx.db.transaction().execute(async (trx) => {
    await setClientCredentialsScopes(trx, applicationId, scopes)
    return narrowed ? revoke({ db: trx, bus: ctx.bus }, { kind: 'machine-tokens-revoked', applicationId }, now) : 0
  })
  const subject = { userId: app.owner_id, application: { clientId: app.client_id, name: app.name } }
  if (scopes === null) {
    await ctx.record({ event: 'operator.client_credentials_off', ...subject, detail: auditDetail.machineTokensRevoked(revoked) })
  } else {
    const event = before === null ? 'operator.client_credentials_on' : 'operator.client_credentials_changed'
    await ctx.record({ event, ...subject, detail: auditDetail.machineScopes(scopes, revoked) })
  }
  return { changed: true, scopes, revoked }
}

/** The scopes as the grant will hold them, implied ones included (docs/decisions/018-operator-scopes.md). */
function grantableScopes(vocabulary: ScopeVocabulary, raw: string): string[] {
  if (raw.trim() === '') throw new RefusedError('Name at least one scope; "off" turns the grant off.')
  let scopes: string[]
  try {
    scopes = vocabulary.parse(raw)
  } catch (err) {
    if (err instanceof OAuthError) throw new RefusedError(err.message)
    throw err
  }
  // OpenID Connect's scopes describe a user; a machine token has none.
  const forUsers = scopes.find((s) => IDENTITY_SCOPES.includes(s))
  if (forUsers !== undefined) throw new RefusedError(`The scope ${forUsers} describes a user; a machine token has none.`)
  return scopes
}

function sameScopes(a: readonly string[] | null, b: readonly string[] | null): boolean {
  if (a === null || b === null) return a === b
  return a.length === b.length && a.every((s) => b.includes(s))
}
