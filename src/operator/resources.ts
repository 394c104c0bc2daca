import { auditDetail } from '../audit/audit-log.js'
import { canonicalIdentifier, identifierProblem } from '../oauth/index.js'
import { lockApplication } from '../repositories/operator-applications.js'
import {
  changeResourceIdentifiers,
  findIdentifiersOfOthers,
  listResourceIdentifiers,
  setResourceTokenTtl,
} from '../repositories/resource-identifiers.js'
import { type OperatorContext, NotFoundError, RefusedError, requireApplication } from './moderation.js'

/*
 * The resource identifiers of a resource server (RFC 8707 §2, docs/decisions/025-audiences.md),
 * declared by an operator only, from the admin pages or `gatehouse apps resources`: a client
 * asks for a token for an API by one of them, and the token is then valid there alone. Each
 * identifier belongs to one application. An application no longer marked a resource server (or
 * suspended) keeps its identifiers, but they are refused as `invalid_target` until it is again.
 */

/** The shortest and longest lifetime an operator may give tokens for a resource server: a minute to a week. */
export const RESOURCE_TOKEN_TTL_BOUNDS = { min: 60, max: 604_800 } as const

/**
 * The most identifiers one resource server may declare. Only an operator writes them and they
 * never expire (deleted with their application), so this cap is what bounds the table; an API
 * with more paths than this names its origin or a common prefix (RFC 8707 §2, docs/operating/limits.md).
 */
export const MAX_RESOURCE_IDENTIFIERS = 20

export interface ResourcesView {
  identifiers: string[]
  /** Null: RESOURCE_TOKEN_TTL_SECONDS_DEFAULT. */
  ttlSeconds: number | null
  resourceServer: boolean
}

export interface ResourcesChange {
  add: readonly string[]
  remove: readonly string[]
  /** The lifetime in seconds; null: back to the default; undefined: unchanged. */
  ttlSeconds?: number | null
}

export async function resourcesOf(ctx: Pick<OperatorContext, 'db'>, applicationId: string): Promise<ResourcesView> {
  const app = await requireApplication(ctx.db, { id: applicationId })
  return {
    identifiers: await listResourceIdentifiers(ctx.db, applicationId),
    ttlSeconds: app.resource_token_ttl_seconds,
    resourceServer: app.is_resource_server,
  }
}

/** Whether `seconds` is a lifetime an operator may choose; the refusal says the bounds. */
export function checkResourceTokenTtl(seconds: number): void {
  const { min, max } = RESOURCE_TOKEN_TTL_BOUNDS
  if (!Number.isInteger(seconds) || seconds < min || seconds > max) {
    throw new RefusedError(`The token lifetime must be a whole number of seconds from ${min} to ${max}.`)
  }
}

/**
 * Adds and removes identifiers and sets the lifetime, in one transaction; audited as
 * `application.resources_changed` when anything changed. Identifiers are added to a resource
 * server only, and each must be free: another application's is refused, never taken.
 */
export async function changeResources(
  ctx: OperatorContext & { publicUrl: string },
  applicationId: string,
  change: ResourcesChange,
  now: Date,
): Promise<ResourcesView & { changed: boolean }> {
  const app = await requireApplication(ctx.db, { id: applicationId })
  const typed = (list: readonly string[]) => [...new Set(list.map((s) => s.trim()).filter((s) => s !== ''))]
  for (const identifier of typed(change.add)) {
    const problem = identifierProblem(identifier, ctx.publicUrl)
    if (problem !== undefined) throw new RefusedError(`The resource identifier ${identifier} ${problem}.`)
  }
  // Kept normalised, as requests are compared (canonicalIdentifier).
  const add = [...new Set(typed(change.add).map(canonicalIdentifier))]
  const remove = [...new Set(typed(change.remove).map(canonicalIdentifier))]
  if (change.ttlSeconds !== undefined && change.ttlSeconds !== null) checkResourceTokenTtl(change.ttlSeconds)
  const both = add.find((s) => remove.includes(s))
  if (both !== undefined) throw new RefusedError(`${both} is both added and removed.`)
  if ((add.length > 0 || (change.ttlSeconds !== undefined && change.ttlSeconds !== null)) && !app.is_resource_server) {
    throw new RefusedError(
      `${app.name} (${app.client_id}) is not a resource server: make it one first (apps resource-server on, or its admin page).`,
    )
  }
  const taken = await findIdentifiersOfOthers(ctx.db, applicationId, add)
  if (taken.length > 0) throw new RefusedError(`${taken[0]} is declared by another application: an identifier names one API.`)

  const result = await ctx.db.transaction().execute(async (trx) => {
    const row = await lockApplication(trx, applicationId)
    if (!row) throw new NotFoundError('No such application.')
    const before = await listResourceIdentifiers(trx, applicationId)
    const added = add.filter((s) => !before.includes(s))
    const removed = remove.filter((s) => before.includes(s))
    if (before.length + added.length - removed.length > MAX_RESOURCE_IDENTIFIERS) {
      throw new RefusedError(`A resource server declares at most ${MAX_RESOURCE_IDENTIFIERS} identifiers: remove one first.`)
    }
    const { added: inserted } = await changeResourceIdentifiers(trx, applicationId, { add: added, remove: removed, now })
    // Another application declared one meanwhile: refused as above, nothing of this change kept.
    if (inserted !== added.length) throw new RefusedError('An identifier was declared by another application meanwhile: try again.')
    const ttlBefore = row.resource_token_ttl_seconds
    const ttlAfter = change.ttlSeconds === undefined ? ttlBefore : change.ttlSeconds
    if (ttlAfter !== ttlBefore) await setResourceTokenTtl(trx, applicationId, ttlAfter)
    return { added, removed, ttlBefore, ttlAfter }
  })
  const changed = result.added.length > 0 || result.removed.length > 0 || result.ttlAfter !== result.ttlBefore
  if (changed) {
    await ctx.record({
      event: 'application.resources_changed',
      userId: app.owner_id,
      application: { clientId: app.client_id, name: app.name },
      detail: auditDetail.resourcesChanged(result.added, result.removed, result.ttlBefore, result.ttlAfter),
    })
  }
  return { ...(await resourcesOf(ctx, applicationId)), changed }
}
