import type { FastifyInstance } from 'fastify'
import { ClientAuthCache } from '../../../oauth/client-auth-cache.js'
import { activeResponse } from '../../../oauth/introspection.js'
import { tokenInfoResponse } from '../../../oauth/token-info.js'
import { subscribeRevocations } from '../../../repositories/revocation-notices.js'
import { lookUpInDatabase } from '../../../verifier/database-source.js'
import { DEFAULT_NEGATIVE_TTL_MS, TokenCache } from '../../../verifier/token-cache.js'
import type { VerifiedToken } from '../../../verifier/types.js'
import type { AppDeps } from '../../deps.js'
import { setOAuthJsonErrorHandler } from '../oauth/json-errors.js'
import introspectRoute from './introspect.js'
import revocationStreamRoute, { RevocationBroadcaster } from './revocation-stream.js'
import tokenInfoRoute from './token-info.js'

interface ServerTokenEntry {
  readonly token: VerifiedToken
  /** Both answers are serialised once per cache entry, not once per request. */
  readonly introspection: string
  readonly tokenInfo: string
}

/**
 * The resource-server side of Gatehouse: introspection, token info and the revocation stream.
 * Registered at the root, outside the page context: these hot paths never run the session or
 * CSRF hooks. One LISTEN subscription per process keeps the caches here honest and feeds the
 * stream; a revocation made by this process reaches them before its response is sent.
 */
export default async function resourceRoutes(app: FastifyInstance, deps: AppDeps): Promise<void> {
  const { db } = deps.database
  const now = () => deps.clock().getTime()
  const tokens = new TokenCache<ServerTokenEntry>({
    maxEntries: deps.config.tokenCacheMaxEntries,
    ttlMs: deps.config.tokenCacheTtlMs,
    negativeTtlMs: DEFAULT_NEGATIVE_TTL_MS,
    now,
    wrap: (token) => ({ token, introspection: activeResponse(token), tokenInfo: tokenInfoResponse(token) }),
    lookup: (_token, digest) => lookUpInDatabase(db, digest),
  })
  const clients = new ClientAuthCache({
    db,
    clock: deps.clock,
    ttlMs: deps.config.tokenCacheTtlMs,
    maxEntries: 10_000,
    failureLimit: deps.config.tokenAuthFailureLimit,
  })
  const broadcaster = new RevocationBroadcaster(db, app.log)

  const unsubscribe = await subscribeRevocations(
    deps.database,
    (notice, origin) => {
      tokens.apply(notice, origin)
      clients.apply(notice)
      // Only committed revocations go out: a local notice may still roll back.
      if (origin === 'notify') broadcaster.publish(notice)
    },
    {
      onConnected: () => {
        // Whatever was announced while the connection was down is lost: start afresh.
        tokens.clear()
        clients.clear()
        broadcaster.reset()
      },
      onDisconnected: (err) => {
        app.log.warn({ err }, 'revocation notifications lost; reconnecting (caches fall back to their TTL meanwhile)')
      },
    },
  )
  app.addHook('preClose', async () => broadcaster.closeAll())
  app.addHook('onClose', async () => unsubscribe())

  await app.register(async (api) => {
    setOAuthJsonErrorHandler(api)
    await api.register(introspectRoute, { clients, tokens })
    await api.register(tokenInfoRoute, { tokens })
    await api.register(revocationStreamRoute, { clients, broadcaster })
  })
}
