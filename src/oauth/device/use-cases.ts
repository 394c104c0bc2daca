import { type Actor, trailOf } from '../../audit/actor.js'
import type { AuditLog } from '../../audit/audit-log.js'
import type { LimitSettings } from '../../limits/policy.js'
import type { Params } from '../params.js'
import type { TokenResponse } from '../token/token-exchange.js'
import { type DeviceAuthorizationResponse, type DeviceFlowContext, exchangeDeviceCode, requestDeviceAuthorization } from './device-flow.js'
import { type DeviceCodeAnswer, type DeviceDecisionAnswer, answerDeviceRequest, checkUserCode } from './device-page.js'
import type { DpopBinding } from '../dpop/binding.js'

/** The device authorization grant (RFC 8628): the device's two endpoints and the user's /device page. */
export interface DeviceUseCases {
  /** POST /oauth/device_authorization (RFC 8628 3.1). */
  /** `resources`: the request's `resource` values (RFC 8707 §2). */
  authorizeDevice(params: Params, authorization: string | undefined, resources?: readonly string[]): Promise<DeviceAuthorizationResponse>
  /** POST /oauth/token with the device code grant (RFC 8628 3.4). */
  exchangeDeviceCode(
    params: Params,
    authorization: string | undefined,
    dpop?: DpopBinding,
    resources?: readonly string[],
  ): Promise<TokenResponse>
  /** POST /device: the code the user typed. */
  checkUserCode(typed: unknown, who: { userId: string; address: string }): Promise<DeviceCodeAnswer>
  /** POST /device/answer: approve or deny; audited. */
  answer(actor: Actor & { readonly userId: string }, form: { requestId: unknown; decision: unknown }): Promise<DeviceDecisionAnswer>
}

export function deviceUseCases(
  ctx: DeviceFlowContext & { audit: AuditLog; limits: Pick<LimitSettings, 'deviceCodeEntries'> },
): DeviceUseCases {
  const page = { db: ctx.db, clock: ctx.clock, scopes: ctx.scopes, limits: ctx.limits }
  return {
    authorizeDevice: (params, authorization, resources) => requestDeviceAuthorization(ctx, params, authorization, resources),
    exchangeDeviceCode: (params, authorization, dpop, resources) => exchangeDeviceCode(ctx, params, authorization, dpop, resources),
    checkUserCode: (typed, who) => checkUserCode(page, typed, who),
    answer: (actor, form) => answerDeviceRequest(page, form, actor.userId, trailOf(ctx.audit, actor)),
  }
}
