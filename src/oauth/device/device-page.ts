import type { AuditTrail } from '../../audit/audit-log.js'
import { auditDetail } from '../../audit/audit-log.js'
import type { Db } from '../../db/connect.js'
import type { Clock } from '../../lib/clock.js'
import { isUuid } from '../../lib/uuid.js'
import { clientAddressKey } from '../../limits/client-address.js'
import { type LimitSettings, RATE_LIMITS, rateRule } from '../../limits/policy.js'
import { takeSlots } from '../../limits/rate-limiter.js'
import { findApplicationById, lockActiveApplicationAndUser } from '../../repositories/applications.js'
import { answerDeviceAuthorization, findDeviceRequestById, findDeviceRequestForPage } from '../../repositories/device-authorizations.js'
import { upsertGrant } from '../../repositories/grants.js'
import { findResourceTargets } from '../../repositories/resource-identifiers.js'
import type { ScopeVocabulary } from '../grants/scope.js'
import { formatUserCode, normaliseUserCode, userCodeDigest } from './user-code.js'

/*
 * The user's side of the device flow (RFC 8628 3.3): the /device page. A logged-in user types
 * the code the device shows; every entry counts against the client address and the account
 * (5.1), so guessing a live code stays hopeless (docs/decisions/020-device-codes.md). A code found
 * shows the consent page; nothing is approved before the user presses Authorize on it, even when
 * the code came in the link (verification_uri_complete: 5.4, remote phishing).
 */

export interface DevicePageContext {
  db: Db
  clock: Clock
  scopes: ScopeVocabulary
  limits: Pick<LimitSettings, 'deviceCodeEntries'>
}

/** What the consent page shows for a device's request. */
export interface DeviceConsent {
  requestId: string
  userCode: string
  appName: string
  ownerEmail: string | undefined
  verified: boolean
  homepageUrl: string | null
  privacyPolicyUrl: string | null
  scopes: { name: string; description: string }[]
  /** RFC 8707: the names of the APIs the device asked for; empty when it named none. */
  apis: string[]
}

export type DeviceCodeAnswer =
  { kind: 'consent'; consent: DeviceConsent } | { kind: 'wrong-code' } | { kind: 'too-many'; retryAfterSeconds: number }

/** POST /device: the code the user typed, counted per address and per account before it is looked up. */
export async function checkUserCode(
  ctx: DevicePageContext,
  typed: unknown,
  who: { userId: string; address: string },
): Promise<DeviceCodeAnswer> {
  const rules = [
    rateRule(RATE_LIMITS.deviceCodeAddress, clientAddressKey(who.address), ctx.limits),
    rateRule(RATE_LIMITS.deviceCodeAccount, who.userId, ctx.limits),
  ]
  const decision = await takeSlots(ctx.db, ctx.clock, rules)
  if (!decision.allowed) return { kind: 'too-many', retryAfterSeconds: decision.retryAfterSeconds }
  const code = normaliseUserCode(typed)
  if (code === undefined) return { kind: 'wrong-code' }
  const found = await findDeviceRequestForPage(ctx.db, userCodeDigest(code), ctx.clock())
  if (!found || !found.allow_device_flow || found.suspended_at !== null) return { kind: 'wrong-code' }
  const servers = found.resources === null ? [] : await findResourceTargets(ctx.db, found.resources)
  return {
    kind: 'consent',
    consent: {
      requestId: found.id,
      userCode: formatUserCode(code),
      appName: found.name,
      // As on the authorize consent page: an unverified address is anyone's claim.
      ownerEmail: found.owner_email_verified ? found.owner_email : undefined,
      verified: found.verified_at !== null,
      homepageUrl: found.homepage_url,
      privacyPolicyUrl: found.privacy_policy_url,
      scopes: ctx.scopes.normalize(found.scopes).map((s) => ({ name: s, description: ctx.scopes.describe(s) })),
      apis: [...new Set(servers.map((s) => s.name))],
    },
  }
}

export type DeviceDecisionAnswer = 'approved' | 'denied' | 'gone' | 'incomplete'

/**
 * POST /device/answer: the user's answer to the consent page, naming the request by its id (only
 * someone who typed the right code has seen it). An approval records the grant, as consent does,
 * so the device's token shows on Authorized Applications and goes with "Revoke access"; both
 * answers are audited.
 */
export async function answerDeviceRequest(
  ctx: DevicePageContext,
  form: { requestId: unknown; decision: unknown },
  userId: string,
  audit: AuditTrail,
): Promise<DeviceDecisionAnswer> {
  if (!isUuid(form.requestId) || (form.decision !== 'approve' && form.decision !== 'deny')) return 'incomplete'
  const now = ctx.clock()
  const row = await findDeviceRequestById(ctx.db, form.requestId, now)
  const application = row && (await findApplicationById(ctx.db, row.application_id))
  if (!row || !application || !application.allow_device_flow) return 'gone'
  const status = form.decision === 'approve' ? 'approved' : 'denied'
  const answered = await ctx.db.transaction().execute(async (trx) => {
    if (!(await lockActiveApplicationAndUser(trx, application.id, userId))) return false
    if (!(await answerDeviceAuthorization(trx, { id: row.id, userId, status, now }))) return false
    if (status === 'approved')
      await upsertGrant(trx, { userId, applicationId: application.id, scopes: row.scopes, resources: row.resources, now })
    return true
  })
  if (!answered) return 'gone'
  await audit.record({
    event: status === 'approved' ? 'grant.given' : 'grant.device_denied',
    userId,
    application: { clientId: application.client_id, name: application.name },
    detail: status === 'approved' ? auditDetail.deviceGrantGiven(row.scopes) : auditDetail.scopes(row.scopes),
  })
  return status
}
