import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { BearerChallenges, bearerToken, failureBody, failureHeaders } from '@gatehouse/verifier/shared'
import type { Services } from '../../../services.js'
import { noStore } from '../oauth/json-errors.js'
import { openToRegisteredOrigins } from '../../cors.js'

const challenges = new BearerChallenges('gatehouse')

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

/**
 * GET and POST /oauth/userinfo (OpenID Connect Core 5.3): the bearer token in the Authorization
 * header (RFC 6750 2.1) or, for a POST, in the form body (2.2), never both (2: invalid_request);
 * errors as RFC 6750 3.1 says, with WWW-Authenticate. Bearer-authenticated and read-only, so any
 * origin may call it (browser applications, src/http/cors.ts), and read its challenge.
 */
export default async function userInfoRoute(
  app: FastifyInstance,
  { identity, oauth }: Pick<Services, 'identity' | 'oauth'>,
): Promise<void> {
  async function answer(request: FastifyRequest, reply: FastifyReply) {
    noStore(reply)
    const inHeader = bearerToken(request.headers.authorization)
    const inBody = formBodyToken(request)
    if (inBody === 'repeated') return refuseMalformed(reply, REPEATED)
    if (inHeader !== undefined && inBody !== undefined) return refuseMalformed(reply, TWO_METHODS)
    const token = inHeader ?? inBody
    const result = token === undefined ? undefined : await identity.userInfo(token)
    if (result === undefined || result.kind === 'invalid') {
      const failure = result === undefined ? challenges.missing : challenges.invalid
      return reply.code(401).headers(failureHeaders(failure)).send(failureBody(failure))
    }
    if (result.kind === 'insufficient-scope') {
      const failure = challenges.forbidden('openid')
      return reply.code(403).headers(failureHeaders(failure)).send(failureBody(failure))
    }
    return reply.type('application/json; charset=utf-8').send(result.body)
  }
  const cors = openToRegisteredOrigins(
    app,
    USERINFO_PATH,
    { methods: ['GET', 'HEAD', 'POST'], allowHeaders: ['Authorization', 'Content-Type'], exposeHeaders: ['WWW-Authenticate'] },
    oauth.allowsBrowserOrigin,
  )
  app.get(USERINFO_PATH, { onRequest: cors }, answer)
  app.post(USERINFO_PATH, { onRequest: cors }, answer)
}
