import type { Db } from '../db/connect.js'
import type { PendingAuthorization, PendingAuthorizationsTable } from '../db/schema.js'
import { deleteSurplus } from './surplus.js'

export interface NewPendingAuthorization {
  userId: string
  applicationId: string
  responseType: PendingAuthorizationsTable['response_type']
  /** Absent, or the response type's default: stored as null. */
  responseMode?: 'query' | 'fragment' | 'form_post'
  redirectUri: string | null
  scopes: string[]
  state: string | null
  codeChallenge: string | null
  codeChallengeMethod: 'S256' | 'plain' | null
  nonce?: string | null
  /** RFC 9449 §10 `dpop_jkt`. */
  dpopJkt?: string | null
  /** RFC 8707: the `resource` identifiers, sorted and distinct; null without. */
  resources?: string[] | null
  now: Date
  expiresAt: Date
  /** The user's newest rows kept, this one included; older ones go (QUOTAS.pendingPerUser, src/limits/policy.ts). */
  keepPerUser: number
}

/**
 * Stores a request for the consent page and returns its id. In the same statement the user's
 * oldest rows beyond `keepPerUser` go, so a user looping over the consent page cannot make the
 * table grow; expired rows are the janitor's (src/limits/janitor.ts). The trim skips rows another
 * transaction holds, so a user's concurrent consent pages never deadlock (deleteSurplus,
 * src/repositories/surplus.ts).
 */
export async function insertPendingAuthorization(db: Db, p: NewPendingAuthorization): Promise<string> {
  const row = await db
    .with('surplus', deleteSurplus({ table: 'pending_authorizations', owner: 'user_id' }, p.userId, p.keepPerUser))
    .insertInto('pending_authorizations')
    .values({
      user_id: p.userId,
      application_id: p.applicationId,
      response_type: p.responseType,
      // Null for the response type's default (query for code, fragment for the others), as rows
      // held before migration 0012.
      response_mode:
        p.responseMode === undefined || p.responseMode === (p.responseType === 'code' ? 'query' : 'fragment') ? null : p.responseMode,
      redirect_uri: p.redirectUri,
      scopes: p.scopes,
      state: p.state,
      code_challenge: p.codeChallenge,
      code_challenge_method: p.codeChallengeMethod,
      nonce: p.nonce ?? null,
      dpop_jkt: p.dpopJkt ?? null,
      resources: p.resources ?? null,
      created_at: p.now,
      expires_at: p.expiresAt,
    })
    .returning('id')
    .executeTakeFirstOrThrow()
  return row.id
}

export type PendingWithClient = PendingAuthorization & { client_id: string }

/** The live request by id, with its application's client_id; `userId` restricts it to its user. */
export function findPendingAuthorization(db: Db, id: string, now: Date, userId?: string): Promise<PendingWithClient | undefined> {
  let q = db
    .selectFrom('pending_authorizations')
    .innerJoin('applications', 'applications.id', 'pending_authorizations.application_id')
    .selectAll('pending_authorizations')
    .select('applications.client_id')
    .where('pending_authorizations.id', '=', id)
    .where('pending_authorizations.expires_at', '>', now)
  if (userId !== undefined) q = q.where('pending_authorizations.user_id', '=', userId)
  return q.executeTakeFirst()
}

/** Deletes the user's live request; false when it was answered already, expired, or is not theirs. */
export async function consumePendingAuthorization(db: Db, id: string, userId: string, now: Date): Promise<boolean> {
  const row = await db
    .deleteFrom('pending_authorizations')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .returning('id')
    .executeTakeFirst()
  return row !== undefined
}

/** Every consent request the user holds open: the account was claimed (src/revocation/revoke.ts). */
export async function deletePendingAuthorizationsOfUser(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('pending_authorizations').where('user_id', '=', userId).execute()
}
