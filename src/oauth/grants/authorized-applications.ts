import { type AuditTrail, auditDetail } from '../../audit/audit-log.js'
import type { Db } from '../../db/connect.js'
import { isUuid } from '../../lib/uuid.js'
import { type GrantListing, findGrantOfUser, listGrantsForUser } from '../../repositories/grants.js'
import { type RevocationContext, revoke } from '../../revocation/revoke.js'

/**
 * "Authorized Applications": the applications this user has granted, newest consent first, with
 * when each grant's expiring tokens stop renewing (its live refresh-token families at `now`).
 */
export function listAuthorizedApplications(db: Db, userId: string, now: Date): Promise<GrantListing[]> {
  return listGrantsForUser(db, userId, now)
}

/**
 * "Revoke access": every token of this user for the grant's application, its pending codes and
 * the consent itself, so the next authorization asks again. A grant that is not the user's, or
 * already gone, changes nothing.
 */
export async function revokeAccess(ctx: RevocationContext, userId: string, grantId: string, now: Date, audit: AuditTrail): Promise<void> {
  const grant = isUuid(grantId) ? await findGrantOfUser(ctx.db, grantId, userId) : undefined
  if (!grant) return
  const revoked = await revoke(ctx, { kind: 'access-revoked', userId, applicationId: grant.application_id }, now)
  await audit.record({
    event: 'grant.revoked',
    userId,
    application: { clientId: grant.client_id, name: grant.application_name },
    detail: auditDetail.tokensRevoked(revoked),
  })
}
