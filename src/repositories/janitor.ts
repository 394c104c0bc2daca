import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/*
 * The janitor's SQL (src/limits/janitor.ts decides what and when). Each table is named with its
 * key (the primary key; for access_tokens the digest's unique constraint, migration 0015) and
 * the column that says how old a row is; every column here is indexed
 * (migrations/0004_janitor_indexes.ts, pending_authorizations_expires_at_idx,
 * audit_events_occurred_at_idx, email_tokens_expires_at_idx, and the expires_at indexes of
 * migrations/0010_second_factor.ts, device_authorizations_expires_at_idx, and those of migration 0022). totp_secrets, recovery_codes and passkeys never expire:
 * they are bounded per account and deleted with it; resource_identifiers never expire either: only an
 * operator writes them, bounded per application (src/operator/resources.ts) and deleted with it. A rule named other than its table says which
 * (`table`).
 */
const AGE_COLUMNS = {
  access_tokens: { key: 'token_hash', age: 'revoked_at' },
  // Expiring access tokens (docs/expiring-tokens.md) past their expiry, kept as long as revoked
  // ones (access_tokens_expires_idx): a dead token is a dead token, whichever way it died.
  expired_access_tokens: { table: 'access_tokens', key: 'token_hash', age: 'expires_at' },
  authorization_codes: { key: 'id', age: 'expires_at' },
  pending_authorizations: { key: 'id', age: 'expires_at' },
  pushed_authorization_requests: { key: 'id', age: 'expires_at' },
  sessions: { key: 'id_hash', age: 'expires_at' },
  rate_limits: { key: 'key', age: 'window_start' },
  audit_events: { key: 'id', age: 'occurred_at' },
  email_tokens: { key: 'id', age: 'expires_at' },
  totp_enrolments: { key: 'user_id', age: 'expires_at' },
  webauthn_challenges: { key: 'id_hash', age: 'expires_at' },
  pending_logins: { key: 'id_hash', age: 'expires_at' },
  signing_keys: { key: 'kid', age: 'not_after' },
  device_authorizations: { key: 'id', age: 'expires_at' },
  // migrations/0022_bound_and_expiring_tokens.ts: refresh tokens and their families past their
  // expiry (a family's is absolute), and DPoP proofs past their iat window.
  refresh_tokens: { key: 'token_hash', age: 'expires_at' },
  refresh_token_families: { key: 'id', age: 'expires_at' },
  dpop_proof_jtis: { key: 'key_hash', age: 'expires_at' },
  // Clients of metadata documents (migration 0026) whose document was not fetched for
  // CLIENT_ID_METADATA_UNUSED_DAYS and that hold no grant (applications_metadata_fetched_at_idx):
  // the next request naming the URL stores the client again. A suspended one is kept, so its
  // next request finds it suspended rather than new.
  metadata_clients: { table: 'applications', key: 'id', age: 'metadata_fetched_at', unusedClient: true },
} as const satisfies Record<string, { table?: string; key: string; age: string; unusedClient?: true }>

export type JanitorTable = keyof typeof AGE_COLUMNS
export const JANITOR_TABLES = Object.freeze(Object.keys(AGE_COLUMNS) as JanitorTable[])

/**
 * Deletes at most `limit` rows of `table` older than `before`, in one statement that finds
 * them by index first, so each statement locks few rows for a short time. Returns how many.
 */
export async function deleteOlderBatch(db: Db, table: JanitorTable, before: Date, limit: number): Promise<number> {
  const rule: { table?: string; key: string; age: string; unusedClient?: true } = AGE_COLUMNS[table]
  const { key, age } = rule
  const name = rule.table ?? table
  const unused = rule.unusedClient
    ? sql`and suspended_at is null and not exists (select 1 from grants where grants.application_id = applications.id)`
    : sql``
  const result = await sql`
    delete from ${sql.table(name)} where ${sql.ref(key)} in (
      select ${sql.ref(key)} from ${sql.table(name)} where ${sql.ref(age)} < ${before} ${unused} limit ${limit}
    )
  `.execute(db)
  return Number(result.numAffectedRows ?? 0)
}

/**
 * Takes the janitor's advisory lock for the rest of `trx`, or answers false at once when
 * another session holds it. A transaction-level lock is released by commit, rollback, or the
 * connection's end, so a fault can never leave it held (PostgreSQL "Advisory Locks").
 */
export async function tryJanitorLock(trx: Db): Promise<boolean> {
  // 4712120001: a key no other code uses, written out so every version agrees on it.
  const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_xact_lock(4712120001) as locked`.execute(trx)
  return rows[0]?.locked === true
}
