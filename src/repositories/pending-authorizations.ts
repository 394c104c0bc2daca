import type { Db } from '../db/connect.js'
import type { PendingAuthorization, PendingAuthorizationsTable } from '../db/schema.js'

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
  now: Date
  expiresAt: Date
  /** The user's newest rows kept, this one included; older ones go (QUOTAS.pendingPerUser, src/limits/policy.ts). */
  keepPerUser: number
}

/**
 * Stores a request for the consent page and returns its id. In the same statement the user's
 * oldest rows beyond `keepPerUser` go, so a user looping over the consent page cannot make the
 * table grow; expired rows are the janitor's (src/limits/janitor.ts). The trim takes only rows no
 * other transaction holds (`skip locked`): two of the user's requests at once, each deleting
 * the surplus it read, would otherwise wait on each other's rows and deadlock (a 500). A row
 * skipped is another statement's to delete, so the cap may be passed by the requests in flight
 * and is kept again by the next one; a kept row is never deleted, since skipping rows only
 * moves the offset towards older ones (test/postgres/held-request-trim-race.test.ts).
 */
export async function insertPendingAuthorization(db: Db, p: NewPendingAuthorization): Promise<string> {
  const row = await db
    .with('surplus', (q) =>
      q.deleteFrom('pending_authorizations').where('id', 'in', (s) =>
        s
          .selectFrom('pending_authorizations')
          .select('id')
          .where('user_id', '=', p.userId)
          .orderBy('created_at', 'desc')
          .offset(p.keepPerUser - 1)
          .forUpdate()
          .skipLocked(),
      ),
    )
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
