import type { FastifyInstance } from 'fastify'
import { BearerChallenges, bearerToken, failureBody, failureHeaders } from '@gatehouse/verifier/shared'
import type { Services } from '../../../services.js'
import { noStore } from '../oauth/json-errors.js'

const challenges = new BearerChallenges('gatehouse')

/** GET /oauth/token/info: the bearer token (RFC 6750 2.1, header only) asks about itself. */
export default async function tokenInfoRoute(app: FastifyInstance, { resource }: Pick<Services, 'resource'>): Promise<void> {
  app.get('/oauth/token/info', async (request, reply) => {
    noStore(reply)
    const token = bearerToken(request.headers.authorization)
    const entry = token === undefined ? undefined : await resource.tokenInfo(token)
    if (entry == null) {
      // RFC 6750 3.1: no credentials → a bare challenge; a bad token → invalid_token.
      const failure = entry === undefined ? challenges.missing : challenges.invalid
      return reply.code(401).headers(failureHeaders(failure)).send(failureBody(failure))
    }
    return reply.type('application/json; charset=utf-8').send(entry.tokenInfo)
  })
}
