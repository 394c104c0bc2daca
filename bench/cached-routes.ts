import { randomUUID } from 'node:crypto'
import formbody from '@fastify/formbody'
import { bearerToken } from '@gatehouse/verifier/shared'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { loadConfig } from '../src/config.js'
import type { DatabaseHandle } from '../src/db/connect.js'
import { systemClock } from '../src/lib/clock.js'
import { ClientAuthCache } from '../src/oauth/token/client-auth-cache.js'
import { introspect } from '../src/oauth/token/introspection.js'
import { singleParams } from '../src/oauth/params.js'
import { createServerTokenCache } from '../src/oauth/token/token-validity.js'

/*
 * Baselines I, J, L and Q (docs/performance.md): the cached introspection's and the
 * cached token info's own work, through Gatehouse's protocol functions and caches from bare
 * Fastify, with none of Gatehouse's HTTP layers (its hooks, headers, logging, metrics and error
 * mapping). What each answer cannot avoid: parsing the request, a SHA-256 of the token (and for
 * introspection of the client's secret), the caches' lookups and the stored answer. A cached
 * row over its own work is what Gatehouse's layers cost; the work over A is what the answer
 * costs beyond Fastify's least route. R, I's work with no token cache, is the ceiling of the
 * introspection's growth row instead (bench/cases.ts growthCeilingCases).
 */

/** The settings Gatehouse runs with in the benchmark: the defaults. */
const config = loadConfig({})

export function cachedRoutes(app: FastifyInstance, database: DatabaseHandle): void {
  const tokens = createServerTokenCache({
    database,
    clock: systemClock,
    ttlMs: config.tokenCacheTtlMs,
    maxEntries: config.tokenCacheMaxEntries,
  })
  // R's: the growth server's (TOKEN_CACHE_MAX_ENTRIES=1, bench/run.ts), so every token is looked up.
  const uncachedTokens = createServerTokenCache({ database, clock: systemClock, ttlMs: config.tokenCacheTtlMs, maxEntries: 1 })
  const clients = new ClientAuthCache({
    db: database.db,
    clock: systemClock,
    ttlMs: config.tokenCacheTtlMs,
    maxEntries: 10_000,
    failureLimit: config.tokenAuthFailureLimit,
  })

  // Introspection's own work (src/oauth/token/introspection.ts) with a token cache, the body as Gatehouse sends it.
  const introspection =
    (cache: typeof tokens) =>
    async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const body = await introspect({ clients, tokens: cache }, singleParams(request.body), request.headers.authorization)
      return reply.header('cache-control', 'no-store').type('application/json; charset=utf-8').send(body)
    }

  void app.register(async (scope) => {
    await scope.register(formbody)
    // I: introspection's own work with Gatehouse's token cache.
    scope.post('/i', introspection(tokens))
    // Q: I's work answered with every header Gatehouse's answer carries, as L is J's: what the
    // documented introspection answer costs before any of Gatehouse's hooks, logger or metrics.
    scope.post('/q', async (request, reply) => {
      answerHeaders(reply)
      const body = await introspect({ clients, tokens }, singleParams(request.body), request.headers.authorization)
      return reply.type('application/json; charset=utf-8').send(body)
    })
    // R: I's work with no token cache, sent the growth tokens: the growth row's own lookup in
    // the token table, at 10,000 tokens and at the larger table (GROWTH_BESIDE, bench/stats.ts).
    scope.post('/r', introspection(uncachedTokens))
  })

  // J: token info's own work: the bearer token, the cache's entry, its stored answer. O sends
  // it fresh tokens: the token info miss's own work, the cache's lookup in the database and the
  // answer built from the row.
  app.get('/j', async (request, reply) => {
    const token = bearerToken(request.headers.authorization)
    const entry = token === undefined ? undefined : await tokens.check(token)
    if (entry == null) return reply.code(401).send()
    return reply.header('cache-control', 'no-store').type('application/json; charset=utf-8').send(entry.tokenInfo)
  })

  // L: J's work, answered with every header Gatehouse's answer carries. What the documented
  // answer costs before any of Gatehouse's hooks, its logger or its metrics.
  app.get('/l', async (request, reply) => {
    answerHeaders(reply)
    const token = bearerToken(request.headers.authorization)
    const entry = token === undefined ? undefined : await tokens.check(token)
    if (entry == null) return reply.code(401).send()
    return reply.type('application/json; charset=utf-8').send(entry.tokenInfo)
  })
}

/**
 * The headers every answer of Gatehouse's carries (docs/operating/backups-and-upgrades.md), set as its hooks and
 * routes set them, before the work: a fresh random request id in X-Request-Id,
 * X-Content-Type-Options, and Pragma beside Cache-Control (src/http/routes/oauth/json-errors.ts).
 */
function answerHeaders(reply: FastifyReply): void {
  reply
    .header('x-request-id', randomUUID())
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
}
