import { type AuditTrail, auditDetail } from '../audit/audit-log.js'
import type { Db } from '../db/connect.js'
import type { Application } from '../db/schema.js'
import { isUuid } from '../lib/uuid.js'
import { lockOwnedApplicationRow, setOwnedApplicationTokenPolicy } from '../repositories/applications.js'
import { type TokenPolicy, describeTokenPolicy, samePolicy, tokenPolicyOf } from './token-policy.js'

export type TokenPolicyChange = { kind: 'changed'; application: Application } | { kind: 'unchanged'; application: Application } | undefined

/**
 * Changes the owner's token policy (docs/applications.md "Token policy"). Nothing already issued
 * changes: a bearer token issued before DPoP was required stays valid until revoked, and a
 * refresh-token family keeps the lifetimes it was made with (its own columns), so the choice
 * applies to the authorizations made from now on (docs/decisions/022-bound-and-expiring-tokens.md).
 * No notice is published: the token endpoint reads the application on each request, and the
 * caches of client authentication hold nothing of the policy.
 */
export async function changeApplicationTokenPolicy(
  db: Db,
  target: { id: string; ownerId: string; policy: TokenPolicy },
  now: Date,
  audit: AuditTrail,
): Promise<TokenPolicyChange> {
  if (!isUuid(target.id)) return undefined
  const result = await db.transaction().execute(async (trx) => {
    const current = await lockOwnedApplicationRow(trx, target.id, target.ownerId)
    if (!current) return undefined
    if (samePolicy(tokenPolicyOf(current), target.policy)) return { kind: 'unchanged' as const, application: current, before: current }
    const application = await setOwnedApplicationTokenPolicy(trx, target.id, target.ownerId, { ...target.policy, now })
    return application && { kind: 'changed' as const, application, before: current }
  })
  if (!result) return undefined
  if (result.kind === 'changed') {
    const { application, before } = result
    await audit.record({
      event: 'application.token_policy_changed',
      userId: application.owner_id,
      application: { clientId: application.client_id, name: application.name },
      detail: auditDetail.tokenPolicyChanged(
        describeTokenPolicy(tokenPolicyOf(before), before.kind).brief,
        describeTokenPolicy(tokenPolicyOf(application), application.kind).brief,
      ),
    })
  }
  return { kind: result.kind, application: result.application }
}
