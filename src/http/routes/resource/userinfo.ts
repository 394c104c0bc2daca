import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { type VerifyFailure, bearerToken, dpopToken, failureBody, failureHeaders } from '@gatehouse/verifier/shared'
import { bearerBinding, bearerChallenges, dpopChallenges } from '../../../oauth/index.js'
import type { Services } from '../../../services.js'
import { noStore } from '../oauth/json-errors.js'
import { openToRegisteredOrigins } from '../../cors.js'

const USERINFO_PATH = '/oauth/userinfo'

const TWO_METHODS = 'The access token must be sent one way only: the Authorization header or the form body'
const REPEATED = 'The form body repeats access_token'

/** RFC 6750 3.1: invalid_request, for a token sent more than one way (RFC 6750 2) or twice. */
function refuseMalformed(reply: FastifyReply, description: string) {
  return reply
    .code(400)
    .header('www-authenticate', `Bearer realm="gatehouse", error="invalid_request", error_description="${description}"`)
    .send({ error: 'invalid_request', error_description: description })
}

/**
 * The access token of a POST's form body (RFC 6750 2.2: application/x-www-form-urlencoded only);
 * `repeated` when the parameter is sent twice. Never the query (2.3): URLs end up in logs.
 */
function formBodyToken(request: FastifyRequest): string | undefined | 'repeated' {
  if (request.method !== 'POST' || !request.headers['content-type']?.startsWith('application/x-www-form-urlencoded')) return undefined
  const value = (request.body as Record<string, unknown> | undefined)?.access_token
  if (Array.isArray(value)) return 'repeated'
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** A refusal with its challenge (RFC 6750 3, RFC 9449 §7.1). */
function refuse(reply: FastifyReply, failure: VerifyFailure) {
  return reply.code(failure.status).headers(failureHeaders(failure)).send(failureBody(failure))
}

/**
 * GET and POST /oauth/userinfo (OpenID Connect Core 5.3): the bearer token in the Authorization
 * header (RFC 6750 2.1) or, for a POST, in the form body (2.2), never both (2: invalid_request);
 * or a token bound to a key as `Authorization: DPoP` with a proof for this endpoint under the
 * issuer (RFC 9449 §7.1), which a bound token needs (§7.2). Errors as RFC 6750 3.1 and RFC 9449
 * §7.1 say, with WWW-Authenticate. Read-only, so any origin may call it (browser applications,
 * src/http/cors.ts), send a DPoP header, and read its challenge.
 */
export default async function userInfoRoute(
  app: FastifyInstance,
  { identity, oauth, resource }: Pick<Services, 'identity' | 'oauth' | 'resource'>,
): Promise<void> {
  async function answer(request: FastifyRequest, reply: FastifyReply) {
    noStore(reply)
    const { authorization } = request.headers
    const inHeader = bearerToken(authorization)
    const bound = inHeader === undefined ? dpopToken(authorization) : undefined
    const inBody = formBodyToken(request)
    if (inBody === 'repeated') return refuseMalformed(reply, REPEATED)
    if ((inHeader ?? bound) !== undefined && inBody !== undefined) return refuseMalformed(reply, TWO_METHODS)
    const token = inHeader ?? bound ?? inBody
    if (token === undefined) return refuse(reply, bearerChallenges.missing)
    const challenges = bound === undefined ? bearerChallenges : dpopChallenges
    const binding = bound === undefined ? bearerBinding : resource.dpopBinding(request.headers.dpop, request.method, USERINFO_PATH)
    const result = await identity.userInfo(token, binding)
    if (result.kind === 'invalid') return refuse(reply, challenges.invalid)
    if (result.kind === 'refused') return refuse(reply, result.failure)
    if (result.kind === 'insufficient-scope') return refuse(reply, challenges.forbidden('openid'))
    return reply.type('application/json; charset=utf-8').send(result.body)
  }
  const cors = openToRegisteredOrigins(
    app,
    USERINFO_PATH,
    { methods: ['GET', 'HEAD', 'POST'], allowHeaders: ['Authorization', 'Content-Type', 'DPoP'], exposeHeaders: ['WWW-Authenticate'] },
    oauth.allowsBrowserOrigin,
  )
  app.get(USERINFO_PATH, { onRequest: cors }, answer)
  app.post(USERINFO_PATH, { onRequest: cors }, answer)
}
