import { type Kysely, sql } from 'kysely'

/*
 * Issue 25, docs/scaling.md "The token table": the digest is the token's primary key, and the
 * uuid `id` that nothing needs goes, with its index, from every insert and every revocation.
 * PostgreSQL cannot turn the unique constraint access_tokens_token_hash_key into a primary key,
 * nor lend its index to another constraint (ALTER TABLE … USING INDEX takes only an index no
 * constraint owns), so the digest index is built once more, as migrations 0004 and 0005 build
 * theirs: writes to the table wait for the build, reads do not. Everything after it changes the
 * catalog only and holds the table's exclusive lock briefly: the primary key takes the new index
 * as it is (renaming it access_tokens_pkey; token_hash is already not null, so no scan), and
 * dropping a column rewrites no rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('access_tokens_digest_idx').unique().on('access_tokens').column('token_hash').execute()
  await db.schema.alterTable('access_tokens').dropConstraint('access_tokens_pkey').execute()
  await db.schema.alterTable('access_tokens').dropConstraint('access_tokens_token_hash_key').execute()
  await sql`alter table access_tokens add constraint access_tokens_pkey primary key using index access_tokens_digest_idx`.execute(db)
  await db.schema.alterTable('access_tokens').dropColumn('id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  // Each row gets a new random id (the old ones are gone); the column now comes last.
  await db.schema.alterTable('access_tokens').dropConstraint('access_tokens_pkey').execute()
  await db.schema.alterTable('access_tokens').addUniqueConstraint('access_tokens_token_hash_key', ['token_hash']).execute()
  await db.schema
    .alterTable('access_tokens')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .execute()
}
