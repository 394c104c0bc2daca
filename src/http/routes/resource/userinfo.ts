import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { BearerChallenges, bearerToken, failureBody, failureHeaders } from '@gatehouse/verifier/shared'
import type { Services } from '../../../services.js'
import { noStore } from '../oauth/json-errors.js'

const challenges = new BearerChallenges('gatehouse')

/**
 * GET and POST /oauth/userinfo (OpenID Connect Core 5.3): the bearer token in the
 * Authorization header (RFC 6750 2.1); errors as RFC 6750 3.1 says, with WWW-Authenticate.
 * Public and read-only, so any origin may call it (browser applications).
 */
export default async function userInfoRoute(app: FastifyInstance, { identity }: Pick<Services, 'identity'>): Promise<void> {
  async function answer(request: FastifyRequest, reply: FastifyReply) {
    noStore(reply).header('access-control-allow-origin', '*')
    const token = bearerToken(request.headers.authorization)
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
  app.get('/oauth/userinfo', answer)
  app.post('/oauth/userinfo', answer)
}
