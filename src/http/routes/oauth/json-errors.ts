import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { InvalidRequestError, OAuthError, ServerError, TemporarilyUnavailableError } from '../../../oauth/index.js'
import type { Probes } from '../../../services.js'
import type { OAuthUseCases } from '../../../oauth/index.js'
import { RETRY_AFTER_SECONDS, databaseUnavailable } from '../../../db/index.js'

/** RFC 6749 5.1 / 5.2: token responses, errors included, must not be cached. */
export function noStore(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache')
}

/** RFC 9449 §8.1: a successful DPoP response carries the nonce to use next, when nonces are required. */
export async function provideNonce(oauth: Pick<OAuthUseCases, 'dpopNonce'>, reply: FastifyReply): Promise<void> {
  const nonce = oauth.dpopNonce()
  if (nonce !== undefined) reply.header('dpop-nonce', await nonce)
}

function send(reply: FastifyReply, error: OAuthError): FastifyReply {
  noStore(reply).code(error.status)
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value)
  return reply.type('application/json; charset=utf-8').send(error.toJSON())
}

/**
 * The single mapping of failures to the wire for client-facing OAuth endpoints: OAuthError as
 * RFC 6749 5.2 JSON; Fastify's own 4xx (malformed body, too large) as invalid_request, never
 * Fastify's default error shape; an unreachable database as 503 temporarily_unavailable, told
 * once per outage through `probes` rather than logged per request; anything else as
 * server_error with the detail only logged.
 */
export function setOAuthJsonErrorHandler(app: FastifyInstance, probes: Pick<Probes, 'refused'>): void {
  app.setErrorHandler(async (err: FastifyError, request, reply) => {
    if (err instanceof OAuthError) return send(reply, err)
    if (databaseUnavailable(err)) {
      probes.refused(err)
      return send(reply, new TemporarilyUnavailableError('The service is temporarily unavailable; try again shortly', RETRY_AFTER_SECONDS))
    }
    const status = err.statusCode ?? 500
    if (status >= 400 && status < 500) {
      const tooLarge = status === 413
      const invalid = new InvalidRequestError(tooLarge ? 'The request body is too large' : 'The request body could not be parsed')
      return noStore(reply)
        .code(tooLarge ? 413 : 400)
        .type('application/json; charset=utf-8')
        .send(invalid.toJSON())
    }
    request.log.error({ err }, 'OAuth endpoint failed')
    return send(reply, new ServerError('The server could not complete the request'))
  })
}
