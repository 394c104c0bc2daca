import type { ListenEvents } from './pg-listen.js'
import { type NoticeOrigin, REVOCATION_CHANNEL, decodeNotice } from './notices.js'
import type { NoticeSink, TokenSource } from './source.js'
import type { VerifiedToken } from './types.js'

/**
 * What database mode needs of a connection to Gatehouse's Postgres: a parameterised query and
 * a LISTEN subscription. Gatehouse's own database handle has both, and so has what the
 * verifier opens itself from a URL.
 */
export interface VerifierDatabase {
  query(text: string, values: readonly unknown[]): Promise<{ rows: readonly unknown[] }>
  /**
   * Subscribes to a NOTIFY channel; resolves once listening. Returns the unsubscribe. `origin`
   * is `local` for a notice announced by the process that revokes (it may not have committed
   * yet), absent or `notify` for one Postgres delivered.
   */
  listen(channel: string, handler: (payload: string, origin?: NoticeOrigin) => void, events?: ListenEvents): Promise<() => Promise<void>>
}

export type DatabaseOption = string | VerifierDatabase

/**
 * The database view whose rows are the live tokens, with their application's client_id and their
 * user's email: the one definition of "a valid token", read by Gatehouse's own introspection,
 * token info and RFC 7009 check as well as by every database-mode verifier. Its columns never
 * change; Gatehouse may change which rows it holds (expiry, say), and a verifier deployed
 * earlier follows without an upgrade (Gatehouse's docs/decisions/017-live-token-view.md).
 * `_v4` (Gatehouse's migration 0025) adds the token's audience (RFC 8707); `_v3` (migration
 * 0022) adds the key a token is bound to and its expiry; `_v2` (migration 0021) holds machine
 * tokens too, whose user_id and email are null; `_v1` (migration 0017), which verifiers of
 * earlier releases read, holds user tokens only, so those refuse a machine token rather than
 * take its client for a user (docs/decisions/021-machine-tokens.md). Neither _v1 nor _v2 holds
 * a bound or expired token (docs/decisions/022-bound-and-expiring-tokens.md), and none of the
 * earlier views holds a token with an audience (docs/decisions/025-audiences.md).
 */
export const LIVE_TOKEN_VIEW = 'gatehouse_live_tokens_v4'

/** The view verifiers of 0.1 read: user tokens only, neither bound nor expired, its columns kept for them. */
export const LIVE_TOKEN_VIEW_V1 = 'gatehouse_live_tokens_v1'

/**
 * The view verifiers of 0.2 read: neither bound nor expired tokens, since they can check neither
 * a proof nor an expiry (Gatehouse's migration 0022); its columns kept for them.
 */
export const LIVE_TOKEN_VIEW_V2 = 'gatehouse_live_tokens_v2'

/**
 * The view verifiers of 0.3 read: no token with an audience, since they cannot check one
 * (Gatehouse's migration 0025); its columns kept for them.
 */
export const LIVE_TOKEN_VIEW_V3 = 'gatehouse_live_tokens_v3'

/**
 * One SELECT by the unique digest index; PostgreSQL inlines the view, so its joins are by
 * primary key, as if written out here. Times come as seconds since the epoch, all a verified
 * token keeps of them (a number costs the driver a parseFloat, a timestamp a date parse and a
 * Date). What constrains a token (the key it is bound to, its expiry, its audience) comes as one
 * JSON column, null for a bearer token valid until revoked for any resource: the driver
 * describes and builds every column of every row, so the common token pays for one null column
 * rather than three (docs/decisions/007-one-statement-hot-paths.md).
 */
export const LIVE_TOKEN_SQL = `select user_id, application_id, scopes, extract(epoch from created_at)::float8 as issued_at, client_id, email,
  case when dpop_jkt is not null or expires_at is not null or audience is not null
    then json_build_object('jkt', dpop_jkt, 'exp', extract(epoch from expires_at)::float8, 'aud', audience) end as constraints
from ${LIVE_TOKEN_VIEW}
where token_hash = $1`

/** RFC 9449 §6, RFC 8707: a token's binding, expiry (seconds since the epoch) and audience; null members for none. */
interface TokenConstraints {
  jkt: string | null
  exp: number | null
  aud: string[] | null
}

interface LiveTokenRow {
  /** Null for a machine token (client credentials, RFC 6749 §4.4). */
  user_id: string | null
  application_id: string
  scopes: string[]
  /** Seconds since the epoch, with their fraction. */
  issued_at: number
  client_id: string
  email: string | null
  /** Null for a bearer token valid until revoked with no audience; text where the driver leaves JSON unparsed. */
  constraints: TokenConstraints | string | null
}

const UNCONSTRAINED: TokenConstraints = Object.freeze({ jkt: null, exp: null, aud: null })

export function toVerifiedToken(row: LiveTokenRow): VerifiedToken {
  const c =
    row.constraints === null
      ? UNCONSTRAINED
      : typeof row.constraints === 'string'
        ? (JSON.parse(row.constraints) as TokenConstraints)
        : row.constraints
  return {
    kind: row.user_id === null ? 'client' : 'user',
    userId: row.user_id,
    subject: row.user_id ?? row.client_id,
    clientId: row.client_id,
    applicationId: row.application_id,
    username: row.email,
    scopes: Object.freeze([...row.scopes]),
    issuedAt: Math.floor(row.issued_at),
    expiresAt: c.exp === null ? null : Math.floor(c.exp),
    jkt: c.jkt,
    audience: c.aud === null ? null : Object.freeze([...c.aud]),
  }
}

/** One indexed SELECT; undefined for unknown or revoked tokens. */
export async function lookUpInDatabase(database: Pick<VerifierDatabase, 'query'>, digest: string): Promise<VerifiedToken | undefined> {
  const { rows } = await database.query(LIVE_TOKEN_SQL, [digest])
  const row = rows[0] as LiveTokenRow | undefined
  return row === undefined ? undefined : toVerifiedToken(row)
}

/**
 * For services that share Gatehouse's Postgres: lookups by SQL, revocations by LISTEN on the
 * channel every revocation NOTIFYs. Given a URL, it opens (and closes) its own connections.
 */
export function databaseSource(database: DatabaseOption, sink: NoticeSink): TokenSource {
  const opened = openDatabase(database)
  let closing = false
  const toError = (err: unknown) => (err instanceof Error ? err : new Error(String(err)))

  // The first LISTEN may fail (the database is restarting): retry until it holds; the LISTEN
  // connection reconnects by itself after that.
  const subscribe = async (): Promise<(() => Promise<void>) | undefined> => {
    const { handle } = await opened
    for (let delay = 100; !closing; delay = Math.min(delay * 2, 5000)) {
      try {
        return await handle.listen(
          REVOCATION_CHANNEL,
          (payload, origin = 'notify') => {
            const notice = decodeNotice(payload)
            if (notice) sink.apply(notice, origin)
          },
          { onConnected: () => sink.connected(), onDisconnected: (err) => sink.disconnected(err) },
        )
      } catch (err) {
        sink.disconnected(toError(err))
        await new Promise((resolve) => setTimeout(resolve, delay).unref())
      }
    }
    return undefined
  }
  const subscription = subscribe().catch((err: unknown) => {
    sink.disconnected(toError(err))
    return undefined
  })

  return {
    notifies: true,
    lookup: async (_token, digest) => lookUpInDatabase((await opened).handle, digest),
    async close() {
      closing = true
      const stop = await subscription
      await stop?.()
      const owned = await opened.catch(() => undefined)
      await owned?.close()
    },
  }
}

async function openDatabase(database: DatabaseOption): Promise<{ handle: VerifierDatabase; close(): Promise<void> }> {
  if (typeof database !== 'string') return { handle: database, close: async () => {} }
  // Loaded only in this mode, so that introspection-mode services never load pg.
  const [{ resilientPool }, { listenerSet }] = await Promise.all([import('./pg-pool.js'), import('./pg-listen.js')])
  const url = database
  // No connection fault can end the resource API's process (see resilientPool); a lookup waits
  // at most 2 s for a connection, then fails like any unreachable database.
  const pool = resilientPool({ connectionString: url, max: 4, connectionTimeoutMillis: 2_000, keepAlive: true })
  const listeners = listenerSet(url)
  const handle: VerifierDatabase = {
    // Named, so each connection parses and plans the lookup once.
    query: (text, values) =>
      pool.query({ text, values: [...values], ...(text === LIVE_TOKEN_SQL ? { name: 'gatehouse_live_token' } : {}) }),
    listen: listeners.listen,
  }
  return {
    handle,
    async close() {
      await listeners.closeAll()
      await pool.end()
    },
  }
}
