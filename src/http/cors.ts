import type { FastifyInstance, onRequestHookHandler } from 'fastify'

/*
 * CORS (the Fetch Standard's CORS protocol) for the endpoints a single-page app calls from the
 * browser: the token and revocation endpoints, UserInfo, the discovery documents and the JWKS.
 * Each answers only the origins of registered single-page apps (docs/applications.md "Which kind of
 * application?"; docs/decisions/019-public-clients-and-consent.md), by name, never `*` and never with
 * credentials: another origin's page gets no CORS header, so its browser shows it nothing.
 */

/** What one path allows a cross-origin page to do. */
export interface PathCors {
  /** The methods a page may use, besides the simple ones it may use without asking. */
  methods: readonly string[]
  /** Request headers a page may send beyond the CORS-safelisted ones (Authorization, say). */
  allowHeaders?: readonly string[]
  /** Response headers a page may read beyond the safelisted ones (WWW-Authenticate, say). */
  exposeHeaders?: readonly string[]
}

/** How long a browser may keep a preflight's answer (browsers cap it: Chromium at two hours). */
export const PREFLIGHT_MAX_AGE_SECONDS = 3600

/** Decides whether a page's origin may call a path: the registered single-page apps' origins. */
export type OriginCheck = (origin: string) => Promise<boolean>

/**
 * CORS for the token and revocation endpoints (docs/decisions/019-public-clients-and-consent.md):
 * only a registered single-page app's origin is answered, by name and never `*`, with
 * `Vary: Origin` so no cache hands one origin's answer to another. A request without an Origin
 * header (a server-side client's) costs nothing more. A preflight from any other origin is
 * refused with 403 and no CORS headers, so the browser stops before sending the request.
 */
export function openToRegisteredOrigins(app: FastifyInstance, path: string, cors: PathCors, allows: OriginCheck): onRequestHookHandler {
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
  const expose = cors.exposeHeaders?.join(', ')
  return function allowRegisteredOrigin(request, reply, done) {
    const origin = request.headers.origin
    if (origin === undefined) return done()
    reply.header('vary', 'Origin')
    allows(origin).then(
      (allowed) => {
        if (allowed) {
          reply.header('access-control-allow-origin', origin)
          if (expose !== undefined) reply.header('access-control-expose-headers', expose)
        }
        done()
      },
      (error: unknown) => done(error as Error),
    )
  }
}
