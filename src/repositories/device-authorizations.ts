import { sql } from 'kysely'
import type { Db } from '../db/connect.js'
import type { DeviceAuthorization } from '../db/schema.js'
import { deleteSurplus } from './surplus.js'

/*
 * Device authorizations (RFC 8628, migration 0020): stored by POST /oauth/device_authorization,
 * answered on the /device page, polled and consumed at the token endpoint. Found by the digest
 * of the device code (the device) or of the normalised user code (the user's page), through
 * their unique indexes, device_authorizations_device_code_hash_key and
 * device_authorizations_user_code_hash_key (migrations/0020_device_authorizations.ts).
 */

export interface NewDeviceAuthorization {
  deviceCodeHash: string
  userCodeHash: string
  applicationId: string
  scopes: string[]
  now: Date
  expiresAt: Date
  intervalSeconds: number
  /** RFC 8707: the `resource` identifiers, sorted and distinct; null without. */
  resources?: string[] | null
  /** The application's newest rows kept, this one included (QUOTAS.deviceAuthorizationsPerApplication). */
  keepPerApplication: number
}

/** Stores one; the application's oldest rows beyond the cap go in the same statement (deleteSurplus). */
export async function insertDeviceAuthorization(db: Db, d: NewDeviceAuthorization): Promise<void> {
  await db
    .with('surplus', deleteSurplus({ table: 'device_authorizations', owner: 'application_id' }, d.applicationId, d.keepPerApplication))
    .insertInto('device_authorizations')
    .values({
      device_code_hash: d.deviceCodeHash,
      user_code_hash: d.userCodeHash,
      application_id: d.applicationId,
      scopes: d.scopes,
      created_at: d.now,
      expires_at: d.expiresAt,
      interval_seconds: d.intervalSeconds,
      resources: d.resources ?? null,
    })
    .execute()
}

/**
 * A device's poll (RFC 8628 3.4, 3.5), in one statement: the row with this device code's digest
 * as it was before this poll, live or expired (the caller tells them apart), and, when it is this
 * application's live and unanswered row, the poll recorded on it: its time, and the interval
 * raised by `slowDownStep` seconds when the poll came within the interval (slow_down). One round
 * trip where a read and a write were two, since every waiting device pays it every few seconds
 * (docs/decisions/007-one-statement-hot-paths.md); the client's authentication reads the
 * application before it, as at /oauth/device_authorization.
 */
export async function pollDeviceAuthorization(
  db: Db,
  p: { deviceCodeHash: string; applicationId: string; now: Date; slowDownStep: number },
): Promise<DeviceAuthorization | undefined> {
  const { rows } = await sql<DeviceAuthorization>`
    with before as (
      select * from device_authorizations where device_code_hash = ${p.deviceCodeHash} for update
    ), polled as (
      update device_authorizations d
         set last_polled_at = ${p.now},
             interval_seconds = d.interval_seconds + case
               when b.last_polled_at is not null
                and b.last_polled_at > ${p.now}::timestamptz - make_interval(secs => b.interval_seconds)
               then ${p.slowDownStep}::int else 0 end
        from before b
       where d.id = b.id and b.status = 'pending' and b.application_id = ${p.applicationId}
         and b.expires_at > ${p.now}
    )
    select * from before`.execute(db)
  return rows[0]
}

/** The live, unanswered row whose `column` is `value`. */
function findPending(db: Db, column: 'user_code_hash' | 'id', value: string, now: Date): Promise<DeviceAuthorization | undefined> {
  return db
    .selectFrom('device_authorizations')
    .selectAll()
    .where(column, '=', value)
    .where('status', '=', 'pending')
    .where('expires_at', '>', now)
    .executeTakeFirst()
}

/** The live, unanswered row with this user code's digest. */
export function findPendingByUserCode(db: Db, userCodeHash: string, now: Date): Promise<DeviceAuthorization | undefined> {
  return findPending(db, 'user_code_hash', userCodeHash, now)
}

/** Records the user's answer once: false when it was answered already or expired. */
export async function answerDeviceAuthorization(
  db: Db,
  a: { id: string; userId: string; status: 'approved' | 'denied'; now: Date },
): Promise<boolean> {
  const row = await db
    .updateTable('device_authorizations')
    .set({ status: a.status, user_id: a.userId })
    .where('id', '=', a.id)
    .where('status', '=', 'pending')
    .where('expires_at', '>', a.now)
    .returning('id')
    .executeTakeFirst()
  return row !== undefined
}

/** Deletes the row once its answer was given to the device (single use); false when another poll did first. */
export async function consumeDeviceAuthorization(db: Db, id: string): Promise<boolean> {
  const row = await db.deleteFrom('device_authorizations').where('id', '=', id).returning('id').executeTakeFirst()
  return row !== undefined
}

/** What the /device consent page shows of a pending request: the application as the consent page names it. */
export interface DeviceRequestListing {
  id: string
  scopes: string[]
  /** RFC 8707: what the device asked for, whose servers the page names. */
  resources: string[] | null
  application_id: string
  client_id: string
  name: string
  homepage_url: string | null
  privacy_policy_url: string | null
  verified_at: Date | null
  allow_device_flow: boolean
  suspended_at: Date | null
  owner_email: string
  owner_email_verified: boolean
}

/** The live, unanswered request with this user code's digest, with its application and owner. */
export function findDeviceRequestForPage(db: Db, userCodeHash: string, now: Date): Promise<DeviceRequestListing | undefined> {
  return db
    .selectFrom('device_authorizations')
    .innerJoin('applications', 'applications.id', 'device_authorizations.application_id')
    .innerJoin('users', 'users.id', 'applications.owner_id')
    .select([
      'device_authorizations.id',
      'device_authorizations.scopes',
      'device_authorizations.resources',
      'applications.id as application_id',
      'applications.client_id',
      'applications.name',
      'applications.homepage_url',
      'applications.privacy_policy_url',
      'applications.verified_at',
      'applications.allow_device_flow',
      'applications.suspended_at',
      'users.email as owner_email',
    ])
    .select(sql<boolean>`users.email_verified_at is not null`.as('owner_email_verified'))
    .where('device_authorizations.user_code_hash', '=', userCodeHash)
    .where('device_authorizations.status', '=', 'pending')
    .where('device_authorizations.expires_at', '>', now)
    .executeTakeFirst()
}

/** The same by id, for the answer to the page's form. */
export function findDeviceRequestById(db: Db, id: string, now: Date): Promise<DeviceAuthorization | undefined> {
  return findPending(db, 'id', id, now)
}
