import type { CompiledQuery } from 'kysely'
import type { Db } from '../db/connect.js'

/*
 * The read side of access tokens for introspection, token info and the verifier: one indexed
 * SELECT per cache miss. It is the hottest query Gatehouse runs, so it is compiled once per
 * database handle and then executed with a new parameter; building and compiling it through
 * Kysely on every call would cost more than Postgres takes to answer it.
 */

function liveTokenQuery(db: Db, tokenHash: string) {
  return db
    .selectFrom('access_tokens as t')
    .innerJoin('applications as a', 'a.id', 't.application_id')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .select(['t.user_id', 't.application_id', 't.scopes', 't.created_at', 'a.client_id', 'u.email'])
    .where('t.token_hash', '=', tokenHash) // access_tokens_token_hash_key; the joins are by primary key
    .where('t.revoked_at', 'is', null)
}

export type LiveToken = Awaited<ReturnType<ReturnType<typeof liveTokenQuery>['executeTakeFirstOrThrow']>>

const compiled = new WeakMap<Db, CompiledQuery<LiveToken>>()

/** The token with its application's client_id and its user's email, if it exists and is not revoked. */
export async function findLiveToken(db: Db, tokenHash: string): Promise<LiveToken | undefined> {
  let template = compiled.get(db)
  if (template === undefined) {
    template = liveTokenQuery(db, '').compile()
    compiled.set(db, template)
  }
  const result = await db.executeQuery<LiveToken>({ ...template, parameters: [tokenHash] })
  return result.rows[0]
}

/**
 * Digests of the revoked tokens of one user for one application, for "Revoke access" notices
 * sent to resource servers that only know tokens by digest (access_tokens_application_user_idx).
 * At most `limit` rows: beyond that, the caller resets its subscribers instead.
 */
export async function findRevokedDigests(db: Db, userId: string, applicationId: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('access_tokens')
    .select('token_hash')
    .where('application_id', '=', applicationId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is not', null)
    .limit(limit)
    .execute()
  return rows.map((r) => r.token_hash)
}
