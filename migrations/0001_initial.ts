import { type Kysely, sql } from 'kysely'

/*
 * The whole data model of Gatehouse. Secrets, codes and tokens are stored only as SHA-256
 * digests (hex) and passwords as argon2id, so a database dump yields nothing usable.
 * Deleting a user removes their sessions, applications, grants, codes and tokens; deleting an
 * application removes its codes, tokens and grants.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addCheckConstraint('users_email_lower', sql`email = lower(email)`)
    .execute()

  await db.schema
    .createTable('sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('sessions_user_id_idx').on('sessions').column('user_id').execute()

  await db.schema
    .createTable('applications')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('client_id', 'text', (c) => c.notNull().unique())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('owner_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('redirect_uris', sql`text[]`, (c) => c.notNull())
    .addColumn('allowed_scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('require_pkce', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('allow_implicit', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addCheckConstraint('applications_redirect_uris_nonempty', sql`cardinality(redirect_uris) > 0`)
    .execute()
  await db.schema.createIndex('applications_owner_id_idx').on('applications').column('owner_id').execute()

  await db.schema
    .createTable('grants')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('application_id', 'uuid', (c) => c.notNull().references('applications.id').onDelete('cascade'))
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addUniqueConstraint('grants_user_application_key', ['user_id', 'application_id'])
    .execute()
  await db.schema.createIndex('grants_application_id_idx').on('grants').column('application_id').execute()

  await db.schema
    .createTable('authorization_codes')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('code_hash', 'text', (c) => c.notNull().unique())
    .addColumn('application_id', 'uuid', (c) => c.notNull().references('applications.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    // As sent to /oauth/authorize, or null when omitted: the token request must repeat it
    // byte for byte (RFC 6749 4.1.3).
    .addColumn('redirect_uri', 'text')
    .addColumn('code_challenge', 'text')
    .addColumn('code_challenge_method', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('consumed_at', 'timestamptz')
    .addCheckConstraint(
      'authorization_codes_pkce_method',
      sql`(code_challenge is null and code_challenge_method is null) or code_challenge_method in ('S256', 'plain')`,
    )
    .execute()
  await db.schema.createIndex('authorization_codes_application_id_idx').on('authorization_codes').column('application_id').execute()
  await db.schema.createIndex('authorization_codes_user_id_idx').on('authorization_codes').column('user_id').execute()

  await db.schema
    .createTable('access_tokens')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('application_id', 'uuid', (c) => c.notNull().references('applications.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('scopes', sql`text[]`, (c) => c.notNull())
    // The code this token was exchanged for; a replayed code revokes these (RFC 6749 4.1.2).
    .addColumn('authorization_code_id', 'uuid', (c) => c.references('authorization_codes.id').onDelete('set null'))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .execute()
  await db.schema.createIndex('access_tokens_application_user_idx').on('access_tokens').columns(['application_id', 'user_id']).execute()
  await db.schema.createIndex('access_tokens_user_id_idx').on('access_tokens').column('user_id').execute()
  await db.schema.createIndex('access_tokens_authorization_code_id_idx').on('access_tokens').column('authorization_code_id').execute()

  // Fixed-window counters for log-in, sign-up and failed client authentication. Kept in the
  // database so every process behind a load balancer enforces the same limit.
  await db.schema
    .createTable('rate_limits')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('window_start', 'timestamptz', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['rate_limits', 'access_tokens', 'authorization_codes', 'grants', 'applications', 'sessions', 'users']) {
    await db.schema.dropTable(t).execute()
  }
}
