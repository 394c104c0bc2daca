import type { FastifyPluginCallback, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import fp from 'fastify-plugin'
import { failureBody, failureHeaders } from './bearer.js'
import type { Verifier } from './core.js'
import { RESOURCE_METADATA_HEADERS, RESOURCE_METADATA_PREFLIGHT_HEADERS } from './resource-metadata.js'
import type { VerifiedToken, VerifyResult } from './types.js'

/*
 * The Fastify adapter of the verifier. Types only come from fastify, so importing
 * `@gatehouse/verifier` never loads Fastify into a service that does not use it.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The scope this route requires (403 insufficient_scope otherwise): with the verifier's `scopes`
     * option, one the file defines; without it, `write` also satisfies any `write_*`.
     */
    requiredScope?: string
    /** Set by the plugin on the protected-resource metadata's routes, which need no token (RFC 9728 §3). */
    gatehouseResourceMetadata?: true
  }
  interface FastifyRequest {
    /** The verified token of this request: its user, application and scopes. */
    accessToken: VerifiedToken | null
  }
}

export interface VerifierPluginOptions {
  verifier: Verifier
  /**
   * Whether the plugin serves the verifier's protected-resource metadata (RFC 9728) when it has a
   * `resource`, default true. Turn it off where the plugin is registered under a prefix (the
   * document belongs at the origin's root, §3.1) and serve `verifier.resourceMetadata` there.
   */
  serveResourceMetadata?: boolean
}

function settle(request: FastifyRequest, reply: FastifyReply, result: VerifyResult, done: HookHandlerDoneFunction): void {
  if (result.ok) {
    request.accessToken = result.token
    done()
    return
  }
  // Answering from the hook ends the request here: the handler never runs.
  reply.code(result.status).headers(failureHeaders(result)).send(failureBody(result))
}

/**
 * Every route in the context where this is registered requires `Authorization: Bearer`, or
 * `Authorization: DPoP` with a proof for a token bound to a key (RFC 9449 §7.1); a route's
 * `config.requiredScope` adds a scope. The handler reads `request.accessToken`.
 */
const plugin: FastifyPluginCallback<VerifierPluginOptions> = (app, { verifier, serveResourceMetadata = true }, done) => {
  if (!app.hasRequestDecorator('accessToken')) app.decorateRequest('accessToken', null)
  // A route requiring a scope the scopes file does not define fails its registration, at start-up.
  app.addHook('onRoute', (route) => verifier.assertKnownScope(route.config?.requiredScope))
  if (serveResourceMetadata && verifier.resourceMetadata !== undefined) {
    if (app.prefix !== '') {
      return done(
        new Error(
          `The protected-resource metadata belongs at the origin's root (RFC 9728 §3.1), not under "${app.prefix}": register the plugin with serveResourceMetadata: false there, and serve verifier.resourceMetadata at the root`,
        ),
      )
    }
    const body = JSON.stringify(verifier.resourceMetadata.document)
    const config = { gatehouseResourceMetadata: true } as const
    for (const url of verifier.resourceMetadata.paths) {
      // GET answers HEAD too (Fastify's exposeHeadRoutes); OPTIONS is a browser's CORS preflight.
      app.get(url, { config }, (_request, reply) => reply.headers(RESOURCE_METADATA_HEADERS).send(body))
      app.options(url, { config }, (_request, reply) => reply.code(204).headers(RESOURCE_METADATA_PREFLIGHT_HEADERS).send())
    }
  }
  app.addHook('onRequest', (request, reply, next) => {
    const { config } = request.routeOptions
    if (config.gatehouseResourceMetadata === true) return next()
    const scope = config.requiredScope
    const { authorization, dpop } = request.headers
    const cached = verifier.verifyRequestCached(authorization, dpop, scope)
    if (cached !== undefined) return settle(request, reply, cached, next)
    // request.protocol and request.host follow Fastify's trustProxy; publicOrigin overrides both.
    const origin = `${request.protocol}://${request.host}`
    const presented = { authorization, dpop, method: request.method, url: request.url, origin }
    verifier.verifyRequest(presented, scope).then((result) => settle(request, reply, result, next), next)
  })
  done()
}

export const gatehouseVerifier = fp(plugin, { fastify: '5.x', name: 'gatehouse-verifier' })
