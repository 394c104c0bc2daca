import type { FastifyInstance, onRequestHookHandler } from 'fastify'

/*
 * CORS (the Fetch Standard's CORS protocol) for the endpoints a browser application may call
 * from any origin: the discovery documents and the JWKS (public and read-only) and UserInfo
 * (bearer-authenticated, OpenID Connect Core 5.3; no cookie reaches it). `*` without
 * credentials is right for them: a browser sends no cookies with such a request and lets the
 * page read only what any origin may read. The token and revocation endpoints are not opened
 * here: what a browser may send them is the client's, per registered origin.
 */

/** What one path allows a cross-origin page to do. */
export interface AnyOriginCors {
  /** The methods a page may use, besides the simple ones it may use without asking. */
  methods: readonly string[]
  /** Request headers a page may send beyond the CORS-safelisted ones (Authorization, say). */
  allowHeaders?: readonly string[]
  /** Response headers a page may read beyond the safelisted ones (WWW-Authenticate, say). */
  exposeHeaders?: readonly string[]
}

/** How long a browser may keep a preflight's answer (browsers cap it: Chromium at two hours). */
export const PREFLIGHT_MAX_AGE_SECONDS = 3600

/**
 * Routes the preflight (OPTIONS, with Access-Control-Request-Method and -Headers) for `path`,
 * and returns the onRequest hook that the path's own routes take, so that every answer they
 * give, a refusal included, carries `Access-Control-Allow-Origin: *`.
 */
export function openToAnyOrigin(app: FastifyInstance, path: string, cors: AnyOriginCors): onRequestHookHandler {
  const expose = cors.exposeHeaders?.join(', ')
  const preflight: Record<string, string> = {
    'access-control-allow-origin': '*',
    'access-control-allow-methods': cors.methods.join(', '),
    'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
  }
  if (cors.allowHeaders !== undefined) preflight['access-control-allow-headers'] = cors.allowHeaders.join(', ')
  app.options(path, async function answerPreflight(_request, reply) {
    return reply.code(204).headers(preflight).send()
  })
  return function allowAnyOrigin(_request, reply, done) {
    reply.header('access-control-allow-origin', '*')
    if (expose !== undefined) reply.header('access-control-expose-headers', expose)
    done()
  }
}

/** Decides whether a page's origin may call a path: the registered single-page apps' origins. */
export type OriginCheck = (origin: string) => Promise<boolean>

/**
 * CORS for the token and revocation endpoints (docs/decisions/019-public-clients-and-consent.md):
 * only a registered single-page app's origin is answered, by name and never `*`, with
 * `Vary: Origin` so no cache hands one origin's answer to another. A request without an Origin
 * header (a server-side client's) costs nothing more. A preflight from any other origin is
 * refused with 403 and no CORS headers, so the browser stops before sending the request.
 */
export function openToRegisteredOrigins(
  app: FastifyInstance,
  path: string,
  cors: AnyOriginCors,
  allows: OriginCheck,
): onRequestHookHandler {
  const preflight: Record<string, string> = {
    'access-control-allow-methods': cors.methods.join(', '),
    'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
    vary: 'Origin',
  }
  if (cors.allowHeaders !== undefined) preflight['access-control-allow-headers'] = cors.allowHeaders.join(', ')
  app.options(path, async function answerPreflight(request, reply) {
    const origin = request.headers.origin
    if (origin === undefined || !(await allows(origin))) {
      return reply.code(403).header('vary', 'Origin').send({
        error: 'invalid_request',
        error_description: 'This origin is not a registered single-page app: register it as a redirect URI of one',
      })
    }
    return reply.code(204).headers(preflight).header('access-control-allow-origin', origin).send()
  })
  return function allowRegisteredOrigin(request, reply, done) {
    const origin = request.headers.origin
    if (origin === undefined) return done()
    reply.header('vary', 'Origin')
    allows(origin).then(
      (allowed) => {
        if (allowed) reply.header('access-control-allow-origin', origin)
        done()
      },
      (error: unknown) => done(error as Error),
    )
  }
}
