import { followRevocationStream } from './revocation-stream-client.js'
import type { NoticeSink, TokenSource } from './source.js'
import type { VerifiedToken } from './types.js'

/*
 * Introspection mode: a resource server that does not share Gatehouse's database asks
 * POST /oauth/introspect (RFC 7662) on a cache miss, authenticated as a registered client.
 */

/** RFC 6749 2.3.1: Basic credentials are form-urlencoded before base64. */
export function basicAuthorization(clientId: string, clientSecret: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, '+')
  return `Basic ${Buffer.from(`${enc(clientId)}:${enc(clientSecret)}`).toString('base64')}`
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null
}

/** RFC 7662 2.2 response → the token, undefined when inactive; throws on a response it cannot use. */
export function fromIntrospection(body: unknown): VerifiedToken | undefined {
  if (!isRecord(body) || typeof body.active !== 'boolean') throw new Error('introspection response lacks "active"')
  if (!body.active) return undefined
  const { sub, client_id: clientId, scope, username, iat, exp, cnf, aud } = body
  if (typeof sub !== 'string' || typeof clientId !== 'string' || typeof scope !== 'string' || typeof iat !== 'number') {
    throw new Error('introspection response lacks sub, client_id, scope or iat')
  }
  // RFC 9068 §2.2: a token without a resource owner has its client as `sub`. A user's id is a
  // UUID (36 characters) and an issued client_id has 24 (Gatehouse's src/lib/tokens.ts): they never meet.
  const machine = sub === clientId
  return {
    kind: machine ? 'client' : 'user',
    userId: machine ? null : sub,
    subject: sub,
    clientId,
    applicationId: null,
    username: typeof username === 'string' ? username : null,
    scopes: Object.freeze(scope.split(' ').filter((s) => s !== '')),
    issuedAt: iat,
    expiresAt: typeof exp === 'number' ? exp : null,
    // RFC 9449 §6.2: a bound token's confirmation.
    jkt: isRecord(cnf) && typeof cnf.jkt === 'string' ? cnf.jkt : null,
    audience: audienceOf(aud),
  }
}

/**
 * RFC 7662 §2.2 `aud`, a string or an array of strings (RFC 7519 §4.1.3); null when absent. A
 * malformed `aud` throws rather than read as no audience, which any resource server would accept.
 */
function audienceOf(aud: unknown): readonly string[] | null {
  if (aud === undefined) return null
  if (typeof aud === 'string') return Object.freeze([aud])
  if (Array.isArray(aud) && aud.every((a): a is string => typeof a === 'string')) return Object.freeze([...aud])
  throw new Error('introspection response has a malformed "aud"')
}

export async function lookUpByIntrospection(
  url: string,
  authorization: string,
  token: string,
  timeoutMs: number,
): Promise<VerifiedToken | undefined> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: `token=${encodeURIComponent(token)}&token_type_hint=access_token`,
    signal: AbortSignal.timeout(timeoutMs),
  })
  if (res.status !== 200) {
    await res.body?.cancel().catch(() => {})
    throw new Error(`introspection answered ${res.status}${res.status === 401 ? ' (check the client credentials)' : ''}`)
  }
  return fromIntrospection(await res.json())
}

export interface IntrospectionSourceOptions {
  introspectionUrl: string
  clientId: string
  clientSecret: string
  revocationStreamUrl?: string | undefined
  timeoutMs: number
  streamIdleTimeoutMs: number
}

/** For a separate service: introspection on a miss, the revocation stream when configured. */
export function introspectionSource(options: IntrospectionSourceOptions, sink: NoticeSink): TokenSource {
  const authorization = basicAuthorization(options.clientId, options.clientSecret)
  const { introspectionUrl, timeoutMs } = options
  const lookup = (token: string) => lookUpByIntrospection(introspectionUrl, authorization, token, timeoutMs)
  if (!options.revocationStreamUrl) return { notifies: false, lookup, close: async () => {} }
  const stream = followRevocationStream({
    url: options.revocationStreamUrl,
    authorization,
    idleTimeoutMs: options.streamIdleTimeoutMs,
    onConnected: () => sink.connected(),
    onDisconnected: (err) => sink.disconnected(err),
    onEvent: ({ event, data }) => {
      if (event === 'revoked') sink.apply({ kind: 'tokens', digests: data.split(',') }, 'notify')
      else if (event === 'reset') sink.reset()
    },
  })
  return { notifies: true, lookup, close: () => stream.stop() }
}
