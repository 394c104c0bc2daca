import type { Db } from '../db/connect.js'
import { deleteSurplus } from './surplus.js'

/*
 * Pushed authorization requests (RFC 9126, migration 0012): stored by POST /oauth/par, read and
 * consumed by GET /oauth/authorize. Rows are found by the digest of the request_uri's random part.
 */

export interface NewPushedRequest {
  requestUriHash: string
  applicationId: string
  /** The authorize parameters; `resource` a list (RFC 8707 §2). */
  params: PushedParams
  now: Date
  expiresAt: Date
  /** The application's newest rows kept, this one included; older ones go (QUOTAS.pushedPerApplication). */
  keepPerApplication: number
}

/**
 * Stores a pushed request. In the same statement the application's oldest rows beyond
 * `keepPerApplication` go, so a client pushing in a loop cannot make the table grow; expired rows
 * are the janitor's (src/limits/janitor.ts). The trim skips rows another transaction holds, so a
 * client's concurrent pushes never deadlock (deleteSurplus, src/repositories/surplus.ts).
 */
export async function insertPushedRequest(db: Db, p: NewPushedRequest): Promise<void> {
  await db
    .with(
      'surplus',
      deleteSurplus({ table: 'pushed_authorization_requests', owner: 'application_id' }, p.applicationId, p.keepPerApplication),
    )
    .insertInto('pushed_authorization_requests')
    .values({
      request_uri_hash: p.requestUriHash,
      application_id: p.applicationId,
      params: JSON.stringify(p.params),
      created_at: p.now,
      expires_at: p.expiresAt,
    })
    .execute()
}

/** Parameter values as pushed: each a string, but `resource`, which may be repeated (RFC 8707 §2). */
export type PushedParams = Record<string, string | string[]>

export interface PushedRequest {
  id: string
  clientId: string
  params: PushedParams
  /** When it was pushed. */
  createdAt: Date
}

/** The live pushed request with this digest, with its application's client_id. */
export async function findPushedRequest(db: Db, requestUriHash: string, now: Date): Promise<PushedRequest | undefined> {
  const row = await db
    .selectFrom('pushed_authorization_requests')
    .innerJoin('applications', 'applications.id', 'pushed_authorization_requests.application_id')
    .select([
      'pushed_authorization_requests.id',
      'pushed_authorization_requests.params',
      'pushed_authorization_requests.created_at',
      'applications.client_id',
    ])
    .where('pushed_authorization_requests.request_uri_hash', '=', requestUriHash)
    .where('pushed_authorization_requests.expires_at', '>', now)
    .executeTakeFirst()
  return row && { id: row.id, clientId: row.client_id, params: JSON.parse(row.params) as PushedParams, createdAt: row.created_at }
}

/** Deletes the live pushed request; false when it was used already or expired (single use, RFC 9126 4). */
export async function consumePushedRequest(db: Db, id: string, now: Date): Promise<boolean> {
  const row = await db
    .deleteFrom('pushed_authorization_requests')
    .where('id', '=', id)
    .where('expires_at', '>', now)
    .returning('id')
    .executeTakeFirst()
  return row !== undefined
}
