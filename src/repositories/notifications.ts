import { sql } from 'kysely'
import type { Db } from '../db/connect.js'

/**
 * Queues NOTIFYs in the caller's transaction (sent at once outside one): Postgres delivers them
 * when, and only if, the transaction commits.
 */
export async function notify(db: Db, channel: string, payloads: readonly string[]): Promise<void> {
  for (const payload of payloads) await sql`select pg_notify(${channel}, ${payload})`.execute(db)
}
