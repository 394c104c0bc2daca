import { describeFailure } from '../db/availability.js'
import type { Db } from '../db/connect.js'
import type { Clock } from '../lib/clock.js'
import { boundedLine } from '../lib/text.js'
import { insertAuditEvent } from '../repositories/audit-events.js'

/*
 * The audit log (docs/operating/admin.md "Audit log"): a row per security event with its time, the account it
 * concerns, who did it, the application concerned, the client's address and a short detail.
 *
 * What a row may hold is decided here and nowhere else: an event name from the vocabulary
 * below, account ids, an application's client_id and name, an address, and a detail built by
 * the functions of `auditDetail` from fixed words and those same safe values. Never a password,
 * token, code, client secret, cookie, CSRF value, email typed into a failed log-in, or link.
 *
 * Recording never fails the action it records: it happens after the action committed, and a
 * failed insert is logged in one line and counted (gatehouse_audit_events_unrecorded_total).
 * Nothing on the token, introspection, token-info or revocation endpoints, nor remembered
 * consent at GET /oauth/authorize, records anything: those paths keep their one statement
 * (docs/decisions/007-one-statement-hot-paths.md).
 */

/**
 * The vocabulary: each event and how the Security log says it in plain words. Names are
 * `area.what_happened` (migrations/0006_audit_events.ts checks the shape). `operator.*` are the
 * operator's actions (src/operator/moderation.ts), from the admin pages or the command line. A
 * row whose name is not listed (written by a newer version) is shown by its name.
 */
export const AUDIT_EVENTS = Object.freeze({
  'user.signed_up': 'Account created',
  'user.signup_email_taken': 'Someone tried to sign up with this email address',
  'user.logged_in': 'Logged in',
  'user.login_failed': 'Log-in failed',
  'user.logged_out': 'Logged out',
  'user.email_verified': 'Email address verified',
  'user.password_changed': 'Password changed',
  'user.password_reset': 'Password reset by email link',
  'user.email_changed': 'Email address changed',
  'user.email_change_cancelled': 'Change of email address cancelled by a link sent to the old address',
  'user.sessions_ended': 'Logged out of all other sessions',
  'user.deleted': 'Account deleted by its owner',
  'user.passkey_added': 'Passkey added',
  'user.passkey_renamed': 'Passkey renamed',
  'user.passkey_removed': 'Passkey removed',
  'user.passkey_counter_refused': 'A passkey was refused: its signature counter went backwards, which a copied authenticator would do',
  'user.reauthenticated': 'Identity confirmed for a sensitive action',
  'user.reauthentication_failed': 'Wrong password when confirming identity for a sensitive action',
  'user.totp_enabled': 'Authenticator app set up; recovery codes generated',
  'user.totp_disabled': 'Authenticator app turned off',
  'user.recovery_codes_regenerated': 'New recovery codes generated; the previous ones stopped working',
  'user.recovery_code_used': 'A recovery code was used',
  'user.second_factor_failures_mailed': 'Wrong two-factor codes were typed; the owner was mailed (once an hour at most)',
  'user.second_factor_locked':
    'Authenticator app codes locked after too many wrong ones in a row, until a recovery code or a passkey is used',
  'user.display_name_changed': 'Display name changed (shared with applications granted the profile scope)',
  'application.created': 'Application registered',
  'application.updated': 'Application settings changed',
  'application.secret_regenerated': 'New client secret generated',
  'application.kind_changed': 'Kind of application changed (web, native, single-page, machine)',
  'application.token_policy_changed': 'Token policy changed (DPoP, access-token and refresh-token lifetimes)',
  'application.deleted': 'Application deleted',
  'application.verification_cleared': 'Operator verification withdrawn by a change of name, redirect URIs or links',
  'application.resources_changed': 'Resource identifiers or the lifetime of tokens for them changed by the operator (RFC 8707)',
  'grant.given': 'Access granted to an application',
  'grant.revoked': 'Access revoked from an application',
  'refresh_token.reused':
    'A refresh token was presented again after it had been exchanged: the authorization it belonged to was revoked, as a stolen copy may have been used',
  'grant.device_denied': "A device's request for access was denied on the /device page",
  'client.metadata_fetched': 'The metadata document of a client without registration was fetched and its settings stored',
  'client.metadata_refused': 'The metadata document of a client without registration was refused',
  'operator.added': 'Made an operator',
  'operator.removed': 'No longer an operator',
  'operator.user_suspended': 'Account suspended by the operator',
  'operator.user_unsuspended': 'Account unsuspended by the operator',
  'operator.user_deleted': 'Account deleted by the operator',
  'operator.application_suspended': 'Application suspended by the operator',
  'operator.application_unsuspended': 'Application unsuspended by the operator',
  'operator.application_verified': 'Application verified by the operator',
  'operator.application_unverified': 'Application no longer verified',
  'operator.resource_server_on': 'Application made a resource server',
  'operator.resource_server_off': 'Application no longer a resource server',
  'operator.application_deleted': 'Application deleted by the operator',
  'operator.tokens_revoked': 'Tokens revoked by the operator',
  'operator.client_credentials_on': 'Client credentials grant enabled by the operator (tokens for the application itself, no user)',
  'operator.client_credentials_changed': 'Scopes of the client credentials grant changed by the operator',
  'operator.client_credentials_off': 'Client credentials grant turned off by the operator',
  'operator.signing_keys_rotated': 'ID Token signing keys rotated by the operator',
  'operator.second_factor_reset': 'Second factor reset by the operator',
} as const)

export type AuditEventName = keyof typeof AUDIT_EVENTS

/** Bounds of what a row holds (the table's check constraints say the same). */
export const AUDIT_DETAIL_MAX = 300
export const AUDIT_NAME_MAX = 200

export function describeAuditEvent(event: string): string {
  return Object.hasOwn(AUDIT_EVENTS, event) ? AUDIT_EVENTS[event as AuditEventName] : event
}

export interface AuditEvent {
  event: AuditEventName
  /** The account the event concerns, whose Security log shows it; null when there is none. */
  userId: string | null
  /** Who did it, when not the trail's actor (a log-in: the account just logged in to). */
  actorId?: string | null
  /** The application concerned, as it is called at this moment. */
  application?: { clientId: string; name: string }
  /** Built by `auditDetail`, never from raw input. */
  detail?: string
}

/**
 * What one request records through: who acts (the logged-in user, or null) and from which
 * address (src/limits/client-address.ts clientAddressForAudit), bound once by the HTTP layer.
 * `record` never rejects.
 */
export interface AuditTrail {
  record(event: AuditEvent): Promise<void>
}

export interface AuditLogWarnings {
  warn(obj: object, msg: string): void
}

export interface AuditLogOptions {
  db: Db
  clock: Clock
  log: AuditLogWarnings
}

/** The recorder, built once in src/services.ts and handed to whatever records. */
export class AuditLog {
  /** Events that could not be written since this process started. */
  unrecorded = 0

  constructor(private readonly options: AuditLogOptions) {}

  /** The trail of one request: `actorId` acts (null: nobody is logged in) from `clientAddress`. */
  trail(actorId: string | null, clientAddress: string | null): AuditTrail {
    return { record: (event) => this.record(event, actorId, clientAddress) }
  }

  /** Writes the event; a failure is logged in one line (the event's name and the cause) and swallowed. */
  async record(event: AuditEvent, actorId: string | null, clientAddress: string | null): Promise<void> {
    try {
      await insertAuditEvent(this.options.db, {
        occurredAt: this.options.clock(),
        event: event.event,
        userId: event.userId,
        actorId: event.actorId === undefined ? actorId : event.actorId,
        clientId: event.application ? boundedLine(event.application.clientId, AUDIT_NAME_MAX) : null,
        applicationName: event.application ? boundedLine(event.application.name, AUDIT_NAME_MAX) : null,
        clientAddress: clientAddress === null ? null : boundedLine(clientAddress, 64),
        detail: boundedLine(event.detail ?? '', AUDIT_DETAIL_MAX),
      })
    } catch (err) {
      this.unrecorded++
      this.options.log.warn({ event: event.event, cause: describeFailure(err) }, 'audit event not recorded')
    }
  }
}

/** What changed in an application's settings, by name (never the values, which may hold anything). */
export interface ApplicationChange {
  name: boolean
  description: boolean
  redirectUris: boolean
  postLogoutRedirectUris: boolean
  allowedScopes: boolean
  requirePkce: boolean
  allowImplicit: boolean
  idTokenAlg: boolean
  requirePushedRequests: boolean
  allowDeviceFlow: boolean
}

const CHANGE_WORDS: Record<keyof ApplicationChange, string> = {
  name: 'name',
  description: 'description',
  redirectUris: 'redirect URIs',
  postLogoutRedirectUris: 'post-logout redirect URIs',
  allowedScopes: 'allowed scopes',
  requirePkce: 'PKCE requirement',
  allowImplicit: 'token flow',
  idTokenAlg: 'ID Token signing algorithm',
  requirePushedRequests: 'pushed request requirement',
  allowDeviceFlow: 'device flow',
}

/** What an approved authorization issued, by response type (src/oauth/authorize/authorize-request.ts). */
const ISSUED_WORDS = {
  code: 'authorization code',
  token: 'access token (token flow)',
  id_token: 'ID Token (implicit flow)',
  'id_token token': 'access token and ID Token (implicit flow)',
} as const

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`

const KIND_SECRET_WORDS = {
  deleted: 'the client secret was deleted (a public client has none)',
  created: 'a new client secret was generated',
  kept: 'the client secret is unchanged',
  none: 'still no client secret',
} as const

/** The detail of each event: fixed words, and only values that are never secret. */
export const auditDetail = {
  scopes: (scopes: readonly string[]) => `Scopes: ${scopes.join(' ')}`,
  grantGiven: (scopes: readonly string[], responseType: keyof typeof ISSUED_WORDS) =>
    `Scopes: ${scopes.join(' ')}; ${ISSUED_WORDS[responseType]} issued`,
  /** RFC 8628: approved on the /device page; the device's token is issued when it next polls. */
  deviceGrantGiven: (scopes: readonly string[]) => `Scopes: ${scopes.join(' ')}; approved for a device (device flow)`,
  tokensRevoked: (n: number) => `${plural(n, 'access token', 'access tokens')} revoked`,
  /** The client credentials grant's scopes (names from the scope vocabulary) and what the change revoked. */
  machineScopes: (scopes: readonly string[], revoked: number) =>
    `Scopes: ${scopes.join(' ')}; ${plural(revoked, 'machine token', 'machine tokens')} revoked`,
  machineTokensRevoked: (revoked: number) => `${plural(revoked, 'machine token', 'machine tokens')} revoked`,
  secretRegenerated: () => 'The previous client secret stopped working',
  kindChanged: (from: string, to: string, secret: 'deleted' | 'created' | 'kept' | 'none') =>
    `From ${from} to ${to}; ${KIND_SECRET_WORDS[secret]}`,
  /** Each side is describeTokenPolicy's brief (src/applications/token-policy.ts): fixed words and lifetimes. */
  tokenPolicyChanged: (before: string, after: string) => `Before: ${before}. After: ${after}`,
  applicationChanged: (change: ApplicationChange, previousName: string) => {
    const fields = (Object.keys(CHANGE_WORDS) as Array<keyof ApplicationChange>).filter((k) => change[k]).map((k) => CHANGE_WORDS[k])
    if (fields.length === 0) return 'Saved without changes'
    const renamed = change.name ? `; previously named "${boundedLine(previousName, 90)}"` : ''
    return `Changed: ${fields.join(', ')}${renamed}`
  },
  loggedIn: (knownDevice: boolean) => (knownDevice ? 'From a browser that logged in to this account before' : 'From a new browser'),
  /** The end_session_endpoint (OpenID Connect RP-Initiated Logout 1.0); the application is the row's own. */
  loggedOutByApplication: () => 'At the request of the application (OpenID Connect RP-Initiated Logout)',
  loginFailed: (accountExists: boolean) => (accountExists ? 'Wrong password' : 'No account has the email address typed (not recorded)'),
  /** A log-in completed by its second step (src/accounts/second-factor/pending-login.ts): `method` names the factor in plain words. */
  loggedInWithSecondFactor: (method: string) => `Password and ${method}`,
  secondFactorFailed: () => 'Right password, wrong second-factor code',
  secondFactorFailuresMailed: () => 'The first wrong code of a burst; the next in the hour are not mailed',
  secondFactorLocked: (failed: number) => `${plural(failed, 'wrong code', 'wrong codes')} in a row`,
  recoveryCodesLeft: (n: number) => `${plural(n, 'recovery code', 'recovery codes')} left`,
  signupEmailTaken: () => 'The account was not changed',
  verificationCleared: () => 'The application needs verifying again',
  /** The hosts of a metadata document's redirect URIs: where its users are sent (host names, not links). */
  metadataFetched: (redirectUris: readonly string[]) => {
    const hosts = [...new Set(redirectUris.map((u) => (URL.canParse(u) ? new URL(u).host || new URL(u).protocol : '')))]
    return `Redirect URIs at ${boundedLine(hosts.join(', '), 260)}`
  },
  /** Why a metadata document was refused: fixed words with host names and addresses (src/oauth/clients/metadata-fetch.ts). */
  metadataRefused: (reason: string) => boundedLine(reason, 280),
  /** A passkey's name is the owner's own words, never a secret. */
  passkey: (name: string) => `Passkey "${boundedLine(name, 64)}"`,
  passkeyRenamed: (from: string, to: string) => `Passkey "${boundedLine(from, 64)}" renamed "${boundedLine(to, 64)}"`,
  passkeyCounter: (name: string, stored: string, received: number) =>
    `Passkey "${boundedLine(name, 64)}": counter ${received} received, ${stored} stored`,
  passkeyLogIn: (knownDevice: boolean) =>
    `With a passkey, ${knownDevice ? 'from a browser that logged in to this account before' : 'from a new browser'}`,
  passkeyLoginFailed: () => 'A passkey was not accepted',
  /**
   * RFC 8707: the identifiers an operator declared or removed (URLs of APIs, never secret) and the
   * lifetime of tokens for them, null being RESOURCE_TOKEN_TTL_SECONDS_DEFAULT.
   */
  resourcesChanged: (added: readonly string[], removed: readonly string[], ttlBefore: number | null, ttlAfter: number | null) => {
    const parts: string[] = []
    if (added.length > 0) parts.push(`Added: ${added.join(' ')}`)
    if (removed.length > 0) parts.push(`Removed: ${removed.join(' ')}`)
    const ttl = (s: number | null) => (s === null ? 'the default' : `${s} s`)
    if (ttlBefore !== ttlAfter) parts.push(`Token lifetime: ${ttl(ttlBefore)} to ${ttl(ttlAfter)}`)
    return parts.join('; ')
  },
  /** Key ids are thumbprints of public keys (RFC 7638), never secret. */
  signingKeysRotated: (keys: ReadonlyArray<{ alg: string; kid: string }>, from: Date) =>
    `Next keys ${keys.map((k) => `${k.alg} ${k.kid}`).join(', ')}; they sign from ${from.toISOString()}`,
}

export function isAuditEventName(v: unknown): v is AuditEventName {
  return typeof v === 'string' && Object.hasOwn(AUDIT_EVENTS, v)
}
