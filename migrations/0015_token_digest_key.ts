import { type Kysely, sql } from 'kysely'

/*
 * docs/scaling.md "The token table": the uuid `id` of access_tokens, which nothing
 * needs, goes with its index, one index entry less for every insert and every revocation. The
 * digest's unique constraint, access_tokens_token_hash_key (token_hash is not null), stays the
 * table's key. It is not made the primary key: PostgreSQL cannot promote a constraint's index
 * (ALTER TABLE … USING INDEX takes only an index no constraint owns), and building another
 * would stop every write to the table, so every sign-in, for as long as the build takes on a
 * table of millions of rows. Every step here changes the catalog only. The replica identity
 * names the digest's index, so that logical replication, which by default identifies rows by
 * the primary key, still carries revocations and deletions.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('access_tokens').dropConstraint('access_tokens_pkey').execute()
  await db.schema.alterTable('access_tokens').dropColumn('id').execute()
  await sql`alter table access_tokens replica identity using index access_tokens_token_hash_key`.execute(db)
}

export async function down(db: Kysely<any>): Promise<void> {
  // Each row gets a new random id (the old ones are gone); the column now comes last.
  await sql`alter table access_tokens replica identity default`.execute(db)
  await db.schema
    .alterTable('access_tokens')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .execute()
}
