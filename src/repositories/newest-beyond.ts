import { type RawBuilder, sql } from 'kysely'
import type { Db } from '../db/connect.js'
import { PLANNED_EACH_TIME } from '../db/prepared-pool.js'

/**
 * The statement MAX_TOKENS_PER_GRANT (src/revocation/token-quota.ts) revokes with, for access
 * tokens and refresh-token families alike: for each owner listed in `owners` (a FROM item named
 * g), its live rows matching `ofOwner` beyond its newest `keep`, at most `limit` per owner, read
 * newest first from the table's owner index, so the cost follows the live rows, never the revoked
 * ones the janitor has yet to delete. The rows are then updated by their key (`= any(array(…))`,
 * not `in (…)`, which may be planned as a hash join over the whole table), and only while still
 * live, so two processes revoke a row once. Planned each time: the owners' spread decides
 * between the index and a scan. Returns the keys revoked.
 *
 * With `notify`, the same statement NOTIFYs its channel with the keys revoked, comma-joined, at
 * most `perNotice` to a payload (the encoding of docs/decisions/003-revocation-propagation.md):
 * delivered when its implicit transaction commits, so the caller needs no transaction of its
 * own, one round trip where BEGIN, the update, NOTIFY and COMMIT were four.
 */
export async function revokeNewestBeyond(
  db: Db,
  target: { table: 'access_tokens' | 'refresh_token_families'; key: 'token_hash' | 'id' },
  owners: RawBuilder<unknown>,
  ofOwner: RawBuilder<unknown>,
  range: { keep: number; limit: number; now: Date },
  notify?: { channel: string; perNotice: number },
): Promise<string[]> {
  const table = sql.table(target.table)
  const key = sql.ref(target.key)
  const update = sql`
    update ${table} set revoked_at = ${range.now}
    where revoked_at is null and ${key} = any(array(
      select t.key
      from ${owners}
      cross join lateral (
        select ${key} as key from ${table}
        where ${ofOwner} and revoked_at is null
        order by created_at desc
        offset ${range.keep} limit ${range.limit}
      ) as t
    ))
    returning ${key} as key`
  if (notify === undefined) {
    const { rows } = await sql<{ key: string }>`${sql.raw(PLANNED_EACH_TIME)}${update}`.execute(db)
    return rows.map((r) => r.key)
  }
  // A SELECT in WITH runs only when referenced: the final condition makes `notified` run, once.
  const { rows } = await sql<{ key: string }>`${sql.raw(PLANNED_EACH_TIME)}
    with revoked as (${update}),
    notified as (
      select pg_notify(${notify.channel}, string_agg(key, ','))
      from (select key, (row_number() over () - 1) / ${notify.perNotice} as part from revoked) as r
      group by part
    )
    select key from revoked where (select count(*) from notified) >= 0`.execute(db)
  return rows.map((r) => r.key)
}
