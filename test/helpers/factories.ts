import { sha256Hex } from '../../src/lib/crypto.js'
import { randomBytes } from 'node:crypto'
import type { Db } from '../../src/db/connect.js'
import type { ApplicationKind } from '../../src/db/schema.js'
import { generateAccessToken, generateClientId, generateClientSecret } from '../../src/lib/tokens.js'
import { QUOTAS } from '../../src/limits/policy.js'
import { insertPendingAuthorization } from '../../src/repositories/pending-authorizations.js'

/*
 * Rows inserted directly, for tests that need data but are not about how it is made (the
 * console and the OAuth flows have their own tests). Plaintext secrets are returned next to
 * the rows, exactly once, as Gatehouse itself would show them.
 */

export interface UserFixture {
  id: string
  email: string
}

/** A user who cannot log in (the password hash is not a hash): enough to own apps and tokens. */
export async function createUser(db: Db, fields: { email?: string; now?: Date; emailVerified?: boolean } = {}): Promise<UserFixture> {
  const email = fields.email ?? `user-${randomBytes(6).toString('hex')}@example.com`
  const now = fields.now ?? new Date()
  const row = await db
    .insertInto('users')
    .values({ email, password_hash: 'not-a-password-hash', created_at: now, email_verified_at: fields.emailVerified ? now : null })
    .returning(['id', 'email'])
    .executeTakeFirstOrThrow()
  return row
}

export interface ApplicationFixture {
  id: string
  clientId: string
  clientSecret: string
  ownerId: string
}

export async function createApplication(
  db: Db,
  fields: {
    ownerId?: string
    name?: string
    scopes?: string[]
    redirectUris?: string[]
    now?: Date
    /** Marked by an operator: may introspect any token and subscribe to revocations. */
    resourceServer?: boolean
    /** docs/applications.md "Which kind of application?"; web by default. */
    kind?: ApplicationKind
    /** Granted by an operator: the client credentials grant's scopes (RFC 6749 §4.4). */
    clientCredentialsScopes?: string[]
  } = {},
): Promise<ApplicationFixture> {
  const ownerId = fields.ownerId ?? (await createUser(db)).id
  // A native or single-page app has no secret (migration 0019): clientSecret is then ''.
  const clientSecret = fields.kind === 'native' || fields.kind === 'spa' ? '' : generateClientSecret()
  const now = fields.now ?? new Date()
  const row = await db
    .insertInto('applications')
    .values({
      client_id: generateClientId(),
      secret_hash: clientSecret === '' ? null : sha256Hex(clientSecret),
      owner_id: ownerId,
      name: fields.name ?? 'Test application',
      redirect_uris: fields.redirectUris ?? ['https://app.example.com/callback'],
      allowed_scopes: fields.scopes ?? ['read', 'write', 'write_members', 'write_teams', 'write_events', 'write_users'],
      is_resource_server: fields.resourceServer ?? false,
      // Only when asked: the migration tests insert applications before these columns exist.
      ...(fields.kind === undefined ? {} : { kind: fields.kind }),
      ...(fields.clientCredentialsScopes === undefined ? {} : { client_credentials_scopes: fields.clientCredentialsScopes }),
      created_at: now,
      updated_at: now,
    })
    .returning(['id', 'client_id'])
    .executeTakeFirstOrThrow()
  return { id: row.id, clientId: row.client_id, clientSecret, ownerId }
}

export interface AccessTokenFixture {
  token: string
  /** sha256Hex(token): the row's primary key (migration 0015). */
  digest: string
  userId: string
  applicationId: string
  scopes: string[]
  createdAt: Date
}

/** An access token issued without a code (as the token flow does), stored by digest. */
export async function createAccessToken(
  db: Db,
  fields: {
    userId: string
    applicationId: string
    scopes?: string[]
    now?: Date
    /** RFC 9449 §6.1: the thumbprint of the key the token is bound to. */
    dpopJkt?: string
    expiresAt?: Date
    /** RFC 8707: the resource identifiers the token is for (sorted and distinct, as the server stores them). */
    audience?: string[]
  },
): Promise<AccessTokenFixture> {
  const token = generateAccessToken()
  const scopes = fields.scopes ?? ['read']
  // Whole seconds, as created_at travels (iat, token info) in seconds.
  const createdAt = fields.now ?? new Date(Math.floor(Date.now() / 1000) * 1000)
  const digest = sha256Hex(token)
  await db
    .insertInto('access_tokens')
    .values({
      token_hash: digest,
      application_id: fields.applicationId,
      user_id: fields.userId,
      scopes,
      authorization_code_id: null,
      created_at: createdAt,
      dpop_jkt: fields.dpopJkt ?? null,
      expires_at: fields.expiresAt ?? null,
      audience: fields.audience ?? null,
    })
    .execute()
  return { token, digest, userId: fields.userId, applicationId: fields.applicationId, scopes, createdAt }
}

/** A user, an application and a token of that user for it: the usual starting point. */
export async function createTokenSetup(db: Db, scopes: string[] = ['read']) {
  const user = await createUser(db)
  const application = await createApplication(db)
  const token = await createAccessToken(db, { userId: user.id, applicationId: application.id, scopes })
  return { user, application, token }
}

/** HTTP Basic credentials as RFC 6749 2.3.1 encodes them. */
export { basicAuthorization as basicAuth } from '../../packages/verifier/src/introspection-source.js'

/**
 * A consent request held for the user's answer (GET /oauth/authorize's page), through the
 * repository as the page holds it, so the user's oldest beyond QUOTAS.pendingPerUser go; its id.
 */
export function holdConsentRequest(db: Db, fields: { userId: string; applicationId: string; now: Date }): Promise<string> {
  return insertPendingAuthorization(db, {
    userId: fields.userId,
    applicationId: fields.applicationId,
    responseType: 'code',
    redirectUri: null,
    scopes: ['read'],
    state: null,
    codeChallenge: null,
    codeChallengeMethod: null,
    now: fields.now,
    expiresAt: new Date(fields.now.getTime() + 600_000),
    keepPerUser: QUOTAS.pendingPerUser.max,
  })
}
