import type { Logger } from 'pino'
import { AuditLog } from './audit/audit-log.js'
import { type ConsoleUseCases, consoleUseCases } from './console/use-cases.js'
import { type OperatorUseCases, operatorUseCases } from './operator/use-cases.js'
import { type MaintenanceUseCases, maintenanceUseCases } from './limits/maintenance.js'
import type { AccountContext } from './accounts/context.js'
import type { MailBrand, MailFrame } from './accounts/mails.js'
import { logoUrl } from './lib/brand.js'
import { type AccountUseCases, type SessionSettings, accountUseCases } from './accounts/use-cases.js'
import type { Config } from './config.js'
import type { DatabaseHandle } from './db/connect.js'
import { type Clock, systemClock } from './lib/clock.js'
import { Janitor } from './limits/janitor.js'
import { type Mailer, createMailer } from './mail/mailer.js'
import { ApplicationCache } from './oauth/clients/application-cache.js'
import { ClientDirectory } from './oauth/clients/client-directory.js'
import { MetadataClients } from './oauth/clients/metadata-clients.js'
import { ClientMetadataResolver } from './oauth/clients/metadata-resolver.js'
import { SessionCache } from './accounts/sessions/session-cache.js'
import { type DeviceUseCases, deviceUseCases } from './oauth/device/use-cases.js'
import { type OAuthDeps, type OAuthUseCases, type ResourceUseCases, oauthUseCases, resourceUseCases } from './oauth/use-cases.js'
import { ClientAuthCache } from './oauth/token/client-auth-cache.js'
import { type ServerTokenCache, createServerTokenCache } from './oauth/token/token-validity.js'
import { type IdentityUseCases, identityUseCases } from './oauth/identity/identity.js'
import { ScopeVocabulary } from './oauth/grants/scope.js'
import { SigningKeys } from './oauth/identity/signing-keys.js'
import { RevocationBus } from './revocation/bus.js'
import { RevocationFeed } from './revocation/stream-feed.js'
import { TokenQuota } from './revocation/token-quota.js'
import { passkeysWorkAt } from './lib/passkey-availability.js'
import { type Probes, probesOf } from './probes.js'
import { type Role, closing, loggerFor, openDatabase, reportOutages, sealingKey, startServing } from './service-lifecycle.js'

export type { Role }
export type { Probes }

/** Client authentications held by the resource-server endpoints' cache. */
const CLIENT_CACHE_MAX_ENTRIES = 10_000

/**
 * Gatehouse's face, built once (docs/architecture.md "Composition root"): route plugins and the
 * command line's handlers receive this, translate a request or argv into one use-case call, and
 * its result into a response or output. The use cases hold every rule (limits, quotas, the
 * verified-address rule, audit records); each takes the acting `Actor` (src/audit/actor.ts).
 */
export interface Services {
  readonly role: Role
  /** Sign-up, log-in and log-out, sessions, the mailed links and the Account pages (src/accounts/use-cases.ts). */
  readonly accounts: AccountUseCases
  /** "Your Applications" (src/console/use-cases.ts). */
  readonly console: ConsoleUseCases
  /** The operator's actions, for the admin pages and the command line (src/operator/use-cases.ts). */
  readonly operator: OperatorUseCases
  /** `gatehouse migrate` and `gatehouse janitor` (src/limits/maintenance.ts). */
  readonly maintenance: MaintenanceUseCases
  /** Authorize, consent, token, revoke, metadata and Authorized Applications (src/oauth/use-cases.ts). */
  readonly oauth: OAuthUseCases
  /** The device authorization grant: its endpoint, its token grant and the /device page (src/oauth/device/use-cases.ts). */
  readonly device: DeviceUseCases
  /** Introspection, token info and the revocation stream's subscribers (src/oauth/use-cases.ts). */
  readonly resource: ResourceUseCases
  /** OpenID Connect: the signing keys, JWKS, discovery and UserInfo (src/oauth/identity/identity.ts). */
  readonly identity: IdentityUseCases
  /** The scopes this Gatehouse knows, for the pages and the command line (docs/operating/scopes.md). */
  readonly scopes: ScopeVocabulary
  /** What the HTTP edge itself reads: cookie settings, page security, timeouts, the service's name. */
  readonly config: Config
  /** Fastify's logger, and where outages are told. */
  readonly log: Logger
  readonly clock: Clock
  /** Whether passkeys can work: PUBLIC_URL's host is a domain name, not an IP address (src/lib/passkey-availability.ts). */
  readonly passkeysAvailable: boolean
  /** What the revocation stream tells its subscribers; the HTTP layer writes the events (GET /oauth/revocations/stream). */
  readonly revocationFeed: RevocationFeed
  /** What /readyz, /metrics and the error handlers read of the parts below the face, and nothing more. */
  readonly probes: Probes
  close(): Promise<void>
}

/**
 * The stateful parts behind the face, which `createServices` returns alongside it: for the
 * composition root itself (src/server.ts names the database in its start-up line), the tests
 * and the benchmarks. The edges see only `Services`, whose type leaves these out.
 */
export interface ServiceParts {
  readonly database: DatabaseHandle
  /** Every revocation reaches every receiver below through it. */
  readonly bus: RevocationBus
  /** Deletes expired rows every JANITOR_INTERVAL_SECONDS (docs/operating/limits.md). */
  readonly janitor: Janitor
  /** Keeps MAX_TOKENS_PER_GRANT after tokens are issued (docs/operating/limits.md). */
  readonly tokenQuota: TokenQuota
  /** Records security events (docs/operating/admin.md "Audit log"). */
  readonly audit: AuditLog
  /** SMTP, or the outbox directory (docs/accounts.md "Mail"). */
  readonly mailer: Mailer
  readonly caches: {
    readonly tokens: ServerTokenCache
    readonly clients: ClientAuthCache
    readonly applications: ApplicationCache
    readonly sessions: SessionCache
  }
}

/** What `createServices` builds: the face the edges are given, and the parts behind it. */
export type AssembledServices = Services & ServiceParts

export interface ServiceOverrides {
  /** 'server' unless said otherwise. */
  role?: Role
  /** An open database (tests share one between apps); closed by its owner, not here. */
  database?: DatabaseHandle
  clock?: Clock
  /** Where log lines go, default stdout. */
  logStream?: NodeJS.WritableStream
  /** Instead of the configured SMTP server or outbox (tests read the mails it keeps). */
  mailer?: Mailer
}

/** What every mail names: the service and its address (src/accounts/mails.ts). */
function mailFrameOf(config: Config): MailFrame {
  return { serviceName: config.serviceName, publicUrl: config.publicUrl, mailBrand: mailBrandOf(config) }
}

/** The brand in mails: the logo by its absolute URL under PUBLIC_URL, as a mail is read away from Gatehouse. */
function mailBrandOf(config: Config): MailBrand {
  const { accentColor, logo } = config.brand
  return { accentColor, logoUrl: logo === undefined ? undefined : config.publicUrl + logoUrl(logo) }
}

/** What the account use cases read of the configuration: links in mails, the service's name, limits. */
function accountSettings(config: Config): Pick<AccountContext, 'publicUrl' | 'serviceName' | 'mailBrand' | 'limits' | 'reauthWindowMs'> {
  return {
    publicUrl: config.publicUrl,
    serviceName: config.serviceName,
    mailBrand: mailBrandOf(config),
    limits: config.limits,
    reauthWindowMs: config.reauthWindowMs,
  }
}

/** How long a session lives and how many one user may hold (SESSION_TTL_HOURS, MAX_SESSIONS_PER_USER). */
function sessionSettings(config: Config): SessionSettings {
  return { ttlMs: config.sessionTtlMs, maxSessions: config.quotas.sessionsPerUser }
}

/** What the OAuth use cases read of the configuration: the issuer, the issue quotas, the failure limit, ID_TOKEN_TTL, the scopes. */
function oauthSettings(
  config: Config,
): Pick<
  OAuthDeps,
  | 'issuer'
  | 'quotas'
  | 'clientAuthFailureLimit'
  | 'idTokenTtlMs'
  | 'scopes'
  | 'dpop'
  | 'refresh'
  | 'clientMetadataDocuments'
  | 'resources'
  | 'metadataHosts'
> {
  return {
    clientMetadataDocuments: config.clientMetadata !== undefined,
    metadataHosts: config.clientMetadata?.hosts,
    refresh: config.refresh,
    resources: config.resources,
    issuer: config.publicUrl,
    scopes: new ScopeVocabulary(config.scopes),
    quotas: config.quotas,
    clientAuthFailureLimit: config.tokenAuthFailureLimit,
    idTokenTtlMs: config.idTokenTtlMs,
    dpop: config.dpop,
  }
}

/** What the operator's use cases read of the configuration: the scopes, and PUBLIC_URL (resource identifiers on loopback). */
function operatorSettings(settings: Pick<OAuthDeps, 'scopes' | 'issuer'>) {
  return { scopes: settings.scopes, publicUrl: settings.issuer }
}

/** What the device flow reads of the configuration (RFC 8628; docs/oauth-endpoints.md "Device flow"). */
function deviceSettings(config: Config, scopes: ScopeVocabulary) {
  return {
    scopes,
    issuer: config.publicUrl,
    clientAuthFailureLimit: config.tokenAuthFailureLimit,
    metadataHosts: config.clientMetadata?.hosts,
    intervalSeconds: config.deviceCodeIntervalSeconds,
    refresh: config.refresh,
    resources: config.resources,
    limits: config.limits,
  }
}

/**
 * Clients named by the URL of their metadata document, when CLIENT_ID_METADATA_DOCUMENTS is on
 * (docs/decisions/026-client-metadata-documents.md); undefined, the default, when off.
 */
function metadataClientsOf(config: Config, db: DatabaseHandle['db'], clock: Clock, audit: AuditLog): MetadataClients | undefined {
  const settings = config.clientMetadata
  if (settings === undefined) return undefined
  const resolver = new ClientMetadataResolver(settings, clock)
  const scopes = new ScopeVocabulary(config.scopes).names
  return new MetadataClients({ db, clock, audit, resolver, scopes, maxClients: settings.maxClients })
}

/** The caches: tokens, clients and applications hear every revocation through the bus; sessions need not (src/accounts/sessions/session-cache.ts). */
function buildCaches(config: Config, database: DatabaseHandle, clock: Clock) {
  const { db } = database
  return {
    tokens: createServerTokenCache({ database, clock, ttlMs: config.tokenCacheTtlMs, maxEntries: config.tokenCacheMaxEntries }),
    clients: new ClientAuthCache({
      db,
      clock,
      ttlMs: config.tokenCacheTtlMs,
      maxEntries: CLIENT_CACHE_MAX_ENTRIES,
      failureLimit: config.tokenAuthFailureLimit,
    }),
    applications: new ApplicationCache(db, clock),
    sessions: new SessionCache(clock, config.sessionCacheMaxEntries),
  }
}

/**
 * Opens the database, builds the caches and the use cases; a server also migrates, listens for
 * revocations and starts the janitor's schedule. The command line migrates as its first step
 * (src/cli/run.ts) through `maintenance.migrate()`, the same path.
 */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<AssembledServices> {
  const role = overrides.role ?? 'server'
  const log = loggerFor(config, role, overrides.logStream)
  const clock = overrides.clock ?? systemClock
  // Before the database opens: a refused key (src/lib/secret-key.ts) leaves nothing to close.
  const sealedBox = (await sealingKey(config)).box
  const database = overrides.database ?? (await openDatabase(config, role))
  const { db } = database

  const stopReporting = role === 'server' ? reportOutages(database, log) : () => {}

  const bus = new RevocationBus(database, log, clock)
  const revocationFeed = new RevocationFeed(db, log, { limits: config.streams })
  const audit = new AuditLog({ db, clock, log })
  const caches = buildCaches(config, database, clock)
  const clientDirectory = new ClientDirectory(db, caches.applications, metadataClientsOf(config, db, clock, audit))
  for (const receiver of [caches.tokens, caches.clients, caches.applications, revocationFeed]) bus.subscribe(receiver)
  const janitor = new Janitor({ database, clock, log, ...config.janitor })
  const maintenance = maintenanceUseCases(database, janitor)
  if (role === 'server') await startServing({ database, maintenance, bus, janitor, migrate: !overrides.database })
  const tokenQuota = new TokenQuota({ db, bus, clock, tokensPerGrant: config.quotas.tokensPerGrant, log })
  const keys = new SigningKeys({ db, clock, box: sealedBox, idTokenTtlMs: config.idTokenTtlMs })
  const settings = oauthSettings(config)
  const oauth = oauthUseCases({ db, clock, bus, audit, tokenQuota, applications: caches.applications, clientDirectory, keys, ...settings })
  const device = deviceUseCases({ db, clock, bus, audit, tokenQuota, ...deviceSettings(config, settings.scopes) })
  const identitySettings = { issuer: config.publicUrl, clientDirectory }
  const mailer = overrides.mailer ?? createMailer(config.mail, log.child({ component: 'mail' }))

  return {
    role,
    accounts: accountUseCases(
      { db, bus, mailer, clock, sealedBox, ...accountSettings(config) },
      audit,
      sessionSettings(config),
      caches.sessions,
    ),
    console: consoleUseCases({ db, bus, clock, audit, applicationsPerUser: config.quotas.applicationsPerUser }),
    operator: operatorUseCases({ db, bus, clock, audit, mailer, mailFrame: mailFrameOf(config), ...operatorSettings(settings) }),
    maintenance,
    oauth,
    device,
    resource: resourceUseCases({ clients: caches.clients, tokens: caches.tokens, feed: revocationFeed, db, clock, ...identitySettings }),
    identity: identityUseCases({ keys, audit, db, tokens: caches.tokens, metadata: oauth.metadata(), ...identitySettings }),
    scopes: settings.scopes,
    config,
    clock,
    passkeysAvailable: passkeysWorkAt(config.publicUrl),
    log,
    database,
    bus,
    revocationFeed,
    janitor,
    tokenQuota,
    audit,
    mailer,
    caches,
    probes: probesOf({ database, janitor, audit, tokenQuota }),
    close: closing({ stopReporting, mailer, janitor, tokenQuota, revocationFeed, bus, database, ownsDatabase: !overrides.database }),
  }
}
