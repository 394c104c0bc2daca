import type { DatabaseHandle, Db } from '../db/connect.js'
import { findLiveToken, type LiveToken } from '../repositories/token-lookup.js'
import { subscribeRevocations } from '../repositories/revocation-notices.js'
import type { NoticeSink, TokenSource } from './source.js'
import type { VerifiedToken } from './types.js'

export function toVerifiedToken(row: LiveToken): VerifiedToken {
  return {
    userId: row.user_id,
    clientId: row.client_id,
    applicationId: row.application_id,
    username: row.email,
    scopes: Object.freeze([...row.scopes]),
    issuedAt: Math.floor(row.created_at.getTime() / 1000),
  }
}

/** Database mode: one indexed SELECT per cache miss; undefined for unknown or revoked tokens. */
export async function lookUpInDatabase(db: Db, digest: string): Promise<VerifiedToken | undefined> {
  const row = await findLiveToken(db, digest)
  return row === undefined ? undefined : toVerifiedToken(row)
}

export type DatabaseOption = string | Pick<DatabaseHandle, 'db' | 'listen'>

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
        return await subscribeRevocations(handle, (notice, origin) => sink.apply(notice, origin), {
          onConnected: () => sink.connected(),
          onDisconnected: (err) => sink.disconnected(err),
        })
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
    lookup: async (_token, digest) => lookUpInDatabase((await opened).handle.db, digest),
    async close() {
      closing = true
      const stop = await subscription
      await stop?.()
      const owned = await opened.catch(() => undefined)
      await owned?.close()
    },
  }
}

async function openDatabase(database: DatabaseOption): Promise<{ handle: Pick<DatabaseHandle, 'db' | 'listen'>; close(): Promise<void> }> {
  if (typeof database !== 'string') return { handle: database, close: async () => {} }
  // Loaded only in this mode, so that introspection-mode services never load pg or PGlite.
  const { createDatabase } = await import('../db/connect.js')
  const handle = await createDatabase({ url: database, poolMax: 4 })
  return { handle, close: () => handle.close() }
}
