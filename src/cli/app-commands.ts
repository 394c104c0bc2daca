import { type Application, describeTokenPolicy, formatLifetime, tokenPolicyOf } from '../applications/index.js'
import { COMMAND_LINE } from '../audit/index.js'
import { type Command, type Invocation, type Output, UsageError, argument, done, page, stateChange } from './command.js'
import { formatRecord, formatTable, iso } from './output.js'

const appsList: Command = {
  arity: 0,
  async run({ flags, services }) {
    const apps = await services.operator.searchApplications({ query: flags.search, page: page(flags) })
    const rows = apps.map((a) => ({
      client_id: a.client_id,
      name: a.name,
      owner: a.owner_email,
      created: iso(a.created_at),
      suspended: iso(a.suspended_at),
      verified: iso(a.verified_at),
      resource_server: a.is_resource_server,
      kind: a.kind,
      tokens: describeTokenPolicy(tokenPolicyOf(a), a.kind).brief,
    }))
    const columns = ['client_id', 'name', 'owner', 'created', 'suspended', 'verified', 'resource_server', 'kind', 'tokens']
    return { text: formatTable(rows, columns), json: rows }
  },
}

const appsShow: Command = {
  arity: 1,
  async run({ args, services }) {
    const app = await services.operator.applicationByClientId(argument(args, 0, 'client_id'))
    const row = {
      client_id: app.client_id,
      name: app.name,
      owner: app.owner_email,
      redirect_uris: app.redirect_uris.join(' '),
      post_logout_redirect_uris: app.post_logout_redirect_uris.join(' '),
      scopes: app.allowed_scopes.join(' '),
      homepage_url: app.homepage_url,
      privacy_policy_url: app.privacy_policy_url,
      created: iso(app.created_at),
      suspended: iso(app.suspended_at),
      verified: iso(app.verified_at),
      resource_server: app.is_resource_server,
      kind: app.kind,
      client_credentials: app.client_credentials_scopes?.join(' ') ?? null,
      ...tokenPolicyRecord(app),
    }
    return {
      text: formatRecord(row),
      json: {
        ...row,
        // Seconds, as stored; null: until revoked (docs/applications.md "Token policy").
        require_dpop: app.require_dpop,
        access_token_ttl_seconds: app.access_token_ttl_seconds,
        refresh_token_ttl_seconds: app.refresh_token_ttl_seconds,
        redirect_uris: app.redirect_uris,
        post_logout_redirect_uris: app.post_logout_redirect_uris,
        scopes: app.allowed_scopes,
        client_credentials: app.client_credentials_scopes,
      },
    }
  },
}

/**
 * The token policy as `apps show` prints it (docs/applications.md "Token policy"): lifetimes in
 * words (--json adds the stored seconds); a machine never has a refresh token (RFC 6749 §4.4.3).
 */
function tokenPolicyRecord(app: Application) {
  const access = app.access_token_ttl_seconds
  const refresh = app.kind === 'machine' || access === null ? null : app.refresh_token_ttl_seconds
  return {
    dpop: app.require_dpop ? 'required' : 'optional',
    access_token_lifetime: access === null ? 'until revoked' : formatLifetime(access),
    refresh_token_lifetime: refresh === null ? null : formatLifetime(refresh),
  }
}

type AppRef = { id: string; client_id: string; name: string }

/** A command on one application, named by client_id. */
function onApp(act: (services: Invocation['services'], app: AppRef, name: string) => Promise<Output>): Command {
  return {
    arity: 1,
    async run({ args, services }) {
      const app = await services.operator.applicationByClientId(argument(args, 0, 'client_id'))
      return act(services, app, `${app.name} (${app.client_id})`)
    },
  }
}

const appsSuspend = onApp(async ({ operator }, app, name) => {
  const { changed, revoked } = await operator.suspendApplication(COMMAND_LINE, app.id)
  const text = changed ? `${name} is suspended; ${revoked} tokens and its codes are revoked.` : `${name} was already suspended.`
  return done(text, { client_id: app.client_id, changed, revoked })
})

const appsUnsuspend = onApp(async ({ operator }, app, name) => {
  const { changed } = await operator.unsuspendApplication(COMMAND_LINE, app.id)
  return done(changed ? `${name} may authorize users again.` : `${name} was not suspended.`, { client_id: app.client_id, changed })
})

function appsVerify(on: boolean): Command {
  return onApp(async ({ operator }, app, name) => {
    const { changed } = await operator.setVerified(COMMAND_LINE, app.id, on)
    return done(stateChange(name, on, changed, 'verified'), { client_id: app.client_id, changed })
  })
}

const appsDelete = onApp(async ({ operator }, app, name) => {
  await operator.deleteApplication(COMMAND_LINE, app.id)
  return done(`${name} is deleted; its tokens are revoked.`, { client_id: app.client_id })
})

const appsResourceServer: Command = {
  arity: 2,
  async run({ args, services }) {
    const app = await services.operator.applicationByClientId(argument(args, 0, 'client_id'))
    const setting = argument(args, 1, 'on or off')
    if (setting !== 'on' && setting !== 'off') throw new UsageError('apps resource-server takes on or off')
    const { changed } = await services.operator.setResourceServer(COMMAND_LINE, app.id, setting === 'on')
    return done(stateChange(`${app.name} (${app.client_id})`, setting === 'on', changed, 'a resource server'), {
      client_id: app.client_id,
      resource_server: setting === 'on',
      changed,
    })
  },
}

/**
 * `apps client-credentials <client_id> --scopes "read write_teams"` or `... off`: the client
 * credentials grant of a machine application (docs/decisions/021-machine-tokens.md).
 */
const appsClientCredentials: Command = {
  arity: 2,
  async run({ args, flags, services }) {
    const app = await services.operator.applicationByClientId(argument(args, 0, 'client_id'))
    const off = args[1] === 'off'
    if (args.length > (off ? 2 : 1)) throw new UsageError('apps client-credentials takes --scopes "SCOPES" or off')
    if (off === (flags.scopes !== undefined)) throw new UsageError('apps client-credentials takes --scopes "SCOPES" or off, one of them')
    const name = `${app.name} (${app.client_id})`
    const { changed, scopes, revoked } = await services.operator.setClientCredentials(COMMAND_LINE, app.id, off ? null : flags.scopes!)
    const revokedText = revoked > 0 ? ` ${revoked} of its machine tokens revoked.` : ''
    const text = !changed
      ? `${name} already ${scopes === null ? 'had the client credentials grant off' : `had the client credentials grant for: ${scopes.join(' ')}`}.`
      : scopes === null
        ? `${name} may no longer use the client credentials grant.${revokedText}`
        : `${name} may use the client credentials grant for: ${scopes.join(' ')}.${revokedText}`
    return done(text, { client_id: app.client_id, client_credentials_scopes: scopes, changed, revoked })
  },
}

/**
 * `apps resources <client_id> [--add URL]... [--remove URL]... [--ttl SECONDS|default]`: the
 * resource identifiers of a resource server (RFC 8707) and the lifetime of tokens for them
 * (docs/decisions/025-audiences.md); without a flag, what they are.
 */
const appsResources: Command = {
  arity: 1,
  async run({ args, flags, services }) {
    const app = await services.operator.applicationByClientId(argument(args, 0, 'client_id'))
    const name = `${app.name} (${app.client_id})`
    const ttlSeconds = ttlFlag(flags.ttl)
    const asks = flags.add !== undefined || flags.remove !== undefined || ttlSeconds !== undefined
    const view = asks
      ? await services.operator.changeResources(COMMAND_LINE, app.id, { add: flags.add ?? [], remove: flags.remove ?? [], ttlSeconds })
      : { ...(await services.operator.resourcesOf(app.id)), changed: false }
    const lifetime = view.ttlSeconds === null ? 'the default (RESOURCE_TOKEN_TTL_SECONDS_DEFAULT)' : formatLifetime(view.ttlSeconds)
    const list = view.identifiers.length === 0 ? 'no resource identifiers' : `resource identifiers ${view.identifiers.join(' ')}`
    const state = view.resourceServer ? '' : ' It is not a resource server: its identifiers are refused until it is one again.'
    const lead = asks ? (view.changed ? 'now has' : 'already had') : 'has'
    return done(`${name} ${lead} ${list}; tokens for them live ${lifetime}.${state}`, {
      client_id: app.client_id,
      resource_server: view.resourceServer,
      resource_identifiers: view.identifiers,
      resource_token_ttl_seconds: view.ttlSeconds,
      changed: view.changed,
    })
  },
}

/** --ttl: seconds, or `default` for RESOURCE_TOKEN_TTL_SECONDS_DEFAULT; undefined when absent. */
function ttlFlag(raw: string | undefined): number | null | undefined {
  if (raw === undefined) return undefined
  if (raw === 'default') return null
  if (!/^\d{1,9}$/.test(raw)) throw new UsageError('apps resources --ttl takes a number of seconds or default')
  return Number(raw)
}

const tokensRevoke: Command = {
  arity: 0,
  async run({ flags, services: { operator } }) {
    if (flags.app === undefined) throw new UsageError('tokens revoke needs --app <client_id>')
    const app = await operator.applicationByClientId(flags.app)
    const user = flags.user === undefined ? undefined : await operator.userByEmail(flags.user)
    const { revoked } = await operator.revokeTokens(COMMAND_LINE, app.id, user?.id)
    return done(`${revoked} tokens of ${app.name} (${app.client_id})${user ? ` for ${user.email}` : ''} revoked.`, {
      client_id: app.client_id,
      user: user?.email ?? null,
      revoked,
    })
  },
}

/** Applications and their tokens (docs/operating/command-line.md). */
export const APP_COMMANDS: Readonly<Record<string, Command>> = {
  'apps list': appsList,
  'apps show': appsShow,
  'apps suspend': appsSuspend,
  'apps unsuspend': appsUnsuspend,
  'apps verify': appsVerify(true),
  'apps unverify': appsVerify(false),
  'apps resource-server': appsResourceServer,
  'apps client-credentials': appsClientCredentials,
  'apps resources': appsResources,
  'apps delete': appsDelete,
  'tokens revoke': tokensRevoke,
}
